import { scoreOf, ScoringWeights } from './scoring';

import type { StrategyName } from '../config/sections/routing';
export { STRATEGY_NAMES } from '../config/sections/routing';
export type { StrategyName } from '../config/sections/routing';

/**
 * Picks one worker among the candidates offered, which are all eligible and have a free slot right
 * now. One decision is `begin()`, `offer(...)` per candidate, `end()`: a single pass with no
 * allocation, since a model may have a thousand workers. Strategies keep their own state
 * (rotation, random source); everything is synchronous, so one decision never interleaves with
 * another.
 */
export interface RoutingStrategy<W extends Rotating> {
  readonly name: StrategyName;
  begin(): void;
  /** `priority`: lower is preferred; `pending`: requests on the worker; `latencyMs`: 0 without data. */
  offer(worker: W, priority: number, pending: number, latencyMs: number): void;
  end(): W | undefined;
}

/** A candidate carries a slot for the rotation's bookkeeping (read on every decision). */
export interface Rotating {
  rotationSeq: number;
}

/**
 * Remembers when each worker was last picked, so ties (and the round-robin strategy) go to the
 * worker picked least recently: a stable rotation that adapts when workers come and go. The
 * sequence is kept in a field of the worker rather than a map, because it is read for every
 * candidate and a model may have a thousand workers.
 */
class Rotation<W extends Rotating> {
  private seq = 0;

  lastPicked(w: W): number {
    return w.rotationSeq;
  }

  picked(w: W | undefined): W | undefined {
    if (w) w.rotationSeq = ++this.seq;
    return w;
  }
}

/**
 * The best candidate by rank (higher wins), ties to the least recently picked: the shared core of
 * smart, round_robin and priority_only.
 */
abstract class RankingStrategy<W extends Rotating> implements RoutingStrategy<W> {
  abstract readonly name: StrategyName;
  private readonly rotation = new Rotation<W>();
  private best: W | undefined;
  private bestRank = -Infinity;
  private bestSeq = Infinity;

  protected abstract rank(priority: number, pending: number, latencyMs: number): number;

  begin(): void {
    this.best = undefined;
    this.bestRank = -Infinity;
    this.bestSeq = Infinity;
  }

  offer(w: W, priority: number, pending: number, latencyMs: number): void {
    const r = this.rank(priority, pending, latencyMs);
    if (r < this.bestRank) return;
    const seq = this.rotation.lastPicked(w);
    if (r > this.bestRank || seq < this.bestSeq) {
      this.best = w;
      this.bestRank = r;
      this.bestSeq = seq;
    }
  }

  end(): W | undefined {
    const w = this.best;
    this.best = undefined;
    return this.rotation.picked(w);
  }
}

/** Highest score wins; ties rotate. */
export class SmartStrategy<W extends Rotating> extends RankingStrategy<W> {
  readonly name = 'smart';
  constructor(private readonly weights: ScoringWeights) {
    super();
  }

  protected rank(priority: number, pending: number, latencyMs: number): number {
    return scoreOf(priority, pending, latencyMs, this.weights);
  }
}

/** Rotates through the candidates in order, each in turn. */
export class RoundRobinStrategy<W extends Rotating> extends RankingStrategy<W> {
  readonly name = 'round_robin';

  protected rank(): number {
    return 0;
  }
}

/** Always the lowest priority number; ties rotate. */
export class PriorityOnlyStrategy<W extends Rotating> extends RankingStrategy<W> {
  readonly name = 'priority_only';

  protected rank(priority: number): number {
    return -priority;
  }
}

/** Uniformly at random (reservoir sampling over the offered candidates). */
export class RandomStrategy<W extends Rotating> implements RoutingStrategy<W> {
  readonly name = 'random';
  private chosen: W | undefined;
  private seen = 0;
  constructor(private readonly random: () => number = Math.random) {}

  begin(): void {
    this.chosen = undefined;
    this.seen = 0;
  }

  offer(w: W): void {
    this.seen++;
    if (this.seen === 1 || this.random() * this.seen < 1) this.chosen = w;
  }

  end(): W | undefined {
    const w = this.chosen;
    this.chosen = undefined;
    return w;
  }
}

export function createStrategy<W extends Rotating>(name: StrategyName, weights: ScoringWeights, random?: () => number): RoutingStrategy<W> {
  switch (name) {
    case 'round_robin':
      return new RoundRobinStrategy<W>();
    case 'priority_only':
      return new PriorityOnlyStrategy<W>();
    case 'random':
      return new RandomStrategy<W>(random);
    case 'smart':
      return new SmartStrategy<W>(weights);
  }
}

import { score, ScoreInputs, ScoringWeights } from './scoring';

export const STRATEGY_NAMES = ['smart', 'round_robin', 'priority_only', 'random'] as const;
export type StrategyName = (typeof STRATEGY_NAMES)[number];

/** What a strategy may ask about a candidate worker. */
export interface CandidateView<W> {
  inputs(worker: W): ScoreInputs;
}

/**
 * Picks one worker among candidates that are all eligible and have a free slot right now.
 * Strategies keep their own state (rotation, random source); `pick` is synchronous and O(n).
 */
export interface RoutingStrategy<W extends object> {
  readonly name: StrategyName;
  pick(candidates: readonly W[], view: CandidateView<W>): W | undefined;
}

/**
 * Remembers when each worker was last picked, so ties (and the round-robin strategy) go to the
 * worker picked least recently: a stable rotation that adapts when workers come and go.
 */
class Rotation<W extends object> {
  private seq = 0;
  private readonly lastPicked = new WeakMap<W, number>();

  /** Among `workers`, the one picked least recently (never-picked first, in the given order). */
  leastRecent(workers: readonly W[], accept: (w: W, index: number) => boolean): W | undefined {
    let best: W | undefined;
    let bestSeq = Infinity;
    for (let i = 0; i < workers.length; i++) {
      const w = workers[i];
      if (!accept(w, i)) continue;
      const s = this.lastPicked.get(w) ?? 0;
      if (s < bestSeq) {
        best = w;
        bestSeq = s;
      }
    }
    return best;
  }

  picked(w: W | undefined): W | undefined {
    if (w) this.lastPicked.set(w, ++this.seq);
    return w;
  }
}

/** Highest score wins; ties rotate. */
export class SmartStrategy<W extends object> implements RoutingStrategy<W> {
  readonly name = 'smart';
  private readonly rotation = new Rotation<W>();
  constructor(private readonly weights: ScoringWeights) {}

  pick(candidates: readonly W[], view: CandidateView<W>): W | undefined {
    if (candidates.length <= 1) return this.rotation.picked(candidates[0]);
    const scores = candidates.map((w) => score(view.inputs(w), this.weights));
    const top = Math.max(...scores);
    return this.rotation.picked(this.rotation.leastRecent(candidates, (_w, i) => scores[i] === top));
  }
}

/** Rotates through the candidates in order, each in turn. */
export class RoundRobinStrategy<W extends object> implements RoutingStrategy<W> {
  readonly name = 'round_robin';
  private readonly rotation = new Rotation<W>();

  pick(candidates: readonly W[]): W | undefined {
    return this.rotation.picked(this.rotation.leastRecent(candidates, () => true));
  }
}

/** Always the lowest priority number; ties rotate. */
export class PriorityOnlyStrategy<W extends object> implements RoutingStrategy<W> {
  readonly name = 'priority_only';
  private readonly rotation = new Rotation<W>();

  pick(candidates: readonly W[], view: CandidateView<W>): W | undefined {
    const priorities = candidates.map((w) => view.inputs(w).priority);
    const lowest = Math.min(...priorities);
    return this.rotation.picked(this.rotation.leastRecent(candidates, (_w, i) => priorities[i] === lowest));
  }
}

/** Uniformly at random. */
export class RandomStrategy<W extends object> implements RoutingStrategy<W> {
  readonly name = 'random';
  constructor(private readonly random: () => number = Math.random) {}

  pick(candidates: readonly W[]): W | undefined {
    if (candidates.length === 0) return undefined;
    return candidates[Math.min(candidates.length - 1, Math.floor(this.random() * candidates.length))];
  }
}

export function createStrategy<W extends object>(name: StrategyName, weights: ScoringWeights, random?: () => number): RoutingStrategy<W> {
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

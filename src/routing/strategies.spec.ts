import fc from 'fast-check';
import { DEFAULT_WEIGHTS, score, ScoreInputs } from './scoring';
import { PriorityOnlyStrategy, RandomStrategy, RoundRobinStrategy, RoutingStrategy, Rotating, SmartStrategy } from './strategies';

/** What a candidate looks like to a strategy in these tests. */
interface CandidateView<W> {
  priority(worker: W): number;
  pending(worker: W): number;
  latencyMs(worker: W): number;
}

/** One decision over a list of candidates, as the router makes it in one pass. */
function pickFrom<W extends Rotating>(strategy: RoutingStrategy<W>, candidates: readonly W[], view?: CandidateView<W>): W | undefined {
  strategy.begin();
  for (const w of candidates) strategy.offer(w, view?.priority(w) ?? 0, view?.pending(w) ?? 0, view?.latencyMs(w) ?? 0);
  return strategy.end();
}

interface W {
  name: string;
  inputs: ScoreInputs;
  rotationSeq: number;
}
const view: CandidateView<W> = { priority: (w) => w.inputs.priority, pending: (w) => w.inputs.pending, latencyMs: (w) => w.inputs.latencyMs };
const worker = (name: string, inputs: Partial<ScoreInputs> = {}): W => ({
  name,
  inputs: { priority: 50, pending: 0, latencyMs: 0, ...inputs },
  rotationSeq: 0,
});

function tally(pick: () => W | undefined, n: number): Record<string, number> {
  const counts: Record<string, number> = {};
  for (let i = 0; i < n; i++) {
    const w = pick()!;
    counts[w.name] = (counts[w.name] ?? 0) + 1;
  }
  return counts;
}

/** A deterministic pseudo-random source (mulberry32), so the distribution test cannot flake. */
function seeded(seed: number): () => number {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

describe('routing strategies', () => {
  it('round_robin: 3 workers, 6 requests → exactly 2 each, in rotation (US-06)', () => {
    const s = new RoundRobinStrategy<W>();
    const ws = [worker('a'), worker('b'), worker('c')];
    const order = Array.from({ length: 6 }, () => pickFrom(s, ws)!.name);
    expect(order).toEqual(['a', 'b', 'c', 'a', 'b', 'c']);
  });

  it('round_robin keeps rotating fairly when a worker joins', () => {
    const s = new RoundRobinStrategy<W>();
    const [a, b, c] = [worker('a'), worker('b'), worker('c')];
    expect([pickFrom(s, [a, b])!.name, pickFrom(s, [a, b])!.name]).toEqual(['a', 'b']);
    expect(pickFrom(s, [a, b, c])!.name).toBe('c'); // never picked: its turn first
  });

  it('round_robin is even over any number of picks', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 12 }), fc.integer({ min: 1, max: 20 }), (n, rounds) => {
        const s = new RoundRobinStrategy<W>();
        const ws = Array.from({ length: n }, (_, i) => worker(`w${i}`));
        const counts = tally(() => pickFrom(s, ws), n * rounds);
        expect(Object.values(counts)).toEqual(Array(n).fill(rounds));
      }),
    );
  });

  it('priority_only: every request goes to the lowest priority number (US-06)', () => {
    const s = new PriorityOnlyStrategy<W>();
    const ws = [worker('p2', { priority: 2 }), worker('p1', { priority: 1, pending: 40, latencyMs: 900 })];
    expect(tally(() => pickFrom(s, ws, view), 10)).toEqual({ p1: 10 });
  });

  it('priority_only rotates among equal priorities', () => {
    const s = new PriorityOnlyStrategy<W>();
    const ws = [worker('a', { priority: 1 }), worker('b', { priority: 1 }), worker('c', { priority: 5 })];
    expect(tally(() => pickFrom(s, ws, view), 10)).toEqual({ a: 5, b: 5 });
  });

  it('random: picks are approximately even over 3 workers (US-06)', () => {
    // 3,000 picks: each worker's share lies within ±4 standard deviations (±104) of 1,000.
    const s = new RandomStrategy<W>(seeded(7));
    const ws = [worker('a'), worker('b'), worker('c')];
    const counts = tally(() => pickFrom(s, ws), 3000);
    expect(Object.keys(counts).sort()).toEqual(['a', 'b', 'c']);
    for (const n of Object.values(counts)) {
      expect(n).toBeGreaterThan(896);
      expect(n).toBeLessThan(1104);
    }
  });

  it('random: reservoir sampling gives every offered worker the same chance', () => {
    // With a source that returns each of its values in turn, the k-th of n candidates wins exactly
    // when the draws say so: check all 3 positions can win.
    for (const draws of [
      [0.9, 0.9],
      [0.1, 0.9],
      [0.9, 0.1],
    ]) {
      let i = 0;
      const s = new RandomStrategy<W>(() => draws[i++]);
      const winner = pickFrom(s, [worker('a'), worker('b'), worker('c')])!.name;
      expect(winner).toBe(draws[1] * 3 < 1 ? 'c' : draws[0] * 2 < 1 ? 'b' : 'a');
    }
  });

  it('smart: the least loaded and the fastest win (US-03)', () => {
    const s = new SmartStrategy<W>(DEFAULT_WEIGHTS);
    expect(pickFrom(s, [worker('busy', { pending: 10 }), worker('idle', { pending: 2 })], view)!.name).toBe('idle');
    expect(pickFrom(s, [worker('slow', { latencyMs: 200 }), worker('fast', { latencyMs: 50 })], view)!.name).toBe('fast');
  });

  it('smart: equal scores rotate instead of always taking the first', () => {
    const s = new SmartStrategy<W>(DEFAULT_WEIGHTS);
    const ws = [worker('a'), worker('b')];
    expect([pickFrom(s, ws, view)!.name, pickFrom(s, ws, view)!.name, pickFrom(s, ws, view)!.name]).toEqual(['a', 'b', 'a']);
  });

  it('smart always picks a top score among the candidates', () => {
    const inputs = fc.record({
      priority: fc.integer({ min: 0, max: 150 }),
      pending: fc.integer({ min: 0, max: 150 }),
      latencyMs: fc.integer({ min: 0, max: 3000 }),
    });
    fc.assert(
      fc.property(fc.array(inputs, { minLength: 1, maxLength: 30 }), fc.integer({ min: 1, max: 5 }), (all, picks) => {
        const s = new SmartStrategy<W>(DEFAULT_WEIGHTS);
        const ws = all.map((x, i) => worker(`w${i}`, x));
        const best = Math.max(...ws.map((w) => score(w.inputs, DEFAULT_WEIGHTS)));
        for (let i = 0; i < picks; i++) expect(score(pickFrom(s, ws, view)!.inputs, DEFAULT_WEIGHTS)).toBe(best);
      }),
    );
  });

  it('every strategy returns nothing for no candidates', () => {
    expect(pickFrom(new SmartStrategy<W>(DEFAULT_WEIGHTS), [], view)).toBeUndefined();
    expect(pickFrom(new RoundRobinStrategy<W>(), [])).toBeUndefined();
    expect(pickFrom(new PriorityOnlyStrategy<W>(), [], view)).toBeUndefined();
    expect(pickFrom(new RandomStrategy<W>(), [])).toBeUndefined();
  });
});

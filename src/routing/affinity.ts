import { mixHash, nameHash } from './affinity-key';

/** What an affinity decision came to (`switchboard_affinity_total{result}`). */
export type AffinityResult = 'preferred' | 'spilled' | 'none';

/** Free candidates remembered per decision, best first; past them the strategy's pick is taken. */
const KEPT = 4;
/**
 * Affinity chooses only among workers whose smart score is within this many points (of 100) of the
 * best free worker's: a cache hit does not make up for a worse priority tier (at the default
 * weights 40 points separate priorities 10 and 90) or a much slower worker (≥ 250 ms of latency
 * average), while a few more pending requests (0.3 points each) are left to the load bound.
 */
export const AFFINITY_SCORE_MARGIN = 5;

interface Hashed {
  readonly name: string;
  affinityHash: number;
}

/**
 * Consistent hashing with bounded loads (Mirrokni, Thorup, Zadimoghaddam 2017) over the eligible
 * workers the router finds in its one pass, as rendezvous hashing: each worker's weight for a key
 * is a mix of the key and the worker's name hash, and the key's order of workers ("the ring") is
 * by weight. The key goes to its highest-weighted worker unless that worker's load would pass the
 * bound `⌈load_factor × (sum of loads + 1) / workers⌉` (or it scores far below the best worker, see
 * AFFINITY_SCORE_MARGIN), else to the next one within the bound. A
 * worker joining or leaving changes only the keys it wins or held, as on a ring, and no ring needs
 * rebuilding when the eligible set changes from one request to the next (pins, pools, health).
 *
 * Cost per decision: O(1) per eligible worker inside the router's existing pass (one multiply-mix
 * and a compare against the best few) and nothing allocated; the few best free workers are kept in
 * fixed arrays. If none of them is within the bound, the strategy's own pick is used (`spilled`).
 */
export class BoundedAffinity<W extends Hashed> {
  private key = 0;
  private count = 0;
  private loadSum = 0;
  private topWeight = -1;
  private top: W | undefined;
  private readonly kept: (W | undefined)[] = new Array<W | undefined>(KEPT).fill(undefined);
  private readonly keptWeight = new Float64Array(KEPT);
  private readonly keptLoad = new Float64Array(KEPT);
  private readonly keptScore = new Float64Array(KEPT);
  private keptCount = 0;
  private bestScore = -Infinity;
  /** The outcome of the last `end()`. */
  result: AffinityResult = 'none';

  constructor(private readonly loadFactor: number) {}

  begin(key: number): void {
    this.key = key;
    this.count = 0;
    this.loadSum = 0;
    this.topWeight = -1;
    this.top = undefined;
    this.keptCount = 0;
    this.bestScore = -Infinity;
  }

  /**
   * Every eligible worker of the decision, with a free slot or not (all count towards the mean
   * load); `score` is its smart score (read for free workers only).
   */
  eligible(w: W, load: number, free: boolean, score: number): void {
    this.count++;
    this.loadSum += load;
    if (w.affinityHash < 0) w.affinityHash = nameHash(w.name);
    const weight = mixHash(this.key, w.affinityHash);
    if (weight > this.topWeight) {
      this.topWeight = weight;
      this.top = w;
    }
    if (free) {
      if (score > this.bestScore) this.bestScore = score;
      this.keep(w, weight, load, score);
    }
  }

  /** Inserts into the best-few list (sorted by weight, highest first); drops the lowest past KEPT. */
  private keep(w: W, weight: number, load: number, score: number): void {
    let i = this.keptCount < KEPT ? this.keptCount++ : KEPT;
    if (i === KEPT && weight <= this.keptWeight[KEPT - 1]) return;
    if (i === KEPT) i = KEPT - 1;
    while (i > 0 && this.keptWeight[i - 1] < weight) {
      this.kept[i] = this.kept[i - 1];
      this.keptWeight[i] = this.keptWeight[i - 1];
      this.keptLoad[i] = this.keptLoad[i - 1];
      this.keptScore[i] = this.keptScore[i - 1];
      i--;
    }
    this.kept[i] = w;
    this.keptWeight[i] = weight;
    this.keptLoad[i] = load;
    this.keptScore[i] = score;
  }

  /** The key's worker within the bound, or undefined (the caller takes its strategy's pick: `spilled`). */
  end(): W | undefined {
    let chosen: W | undefined;
    if (this.count > 0) {
      const bound = Math.ceil((this.loadFactor * (this.loadSum + 1)) / this.count);
      const floor = this.bestScore - AFFINITY_SCORE_MARGIN;
      for (let i = 0; i < this.keptCount; i++) {
        if (this.keptLoad[i] + 1 <= bound && this.keptScore[i] >= floor) {
          chosen = this.kept[i];
          break;
        }
      }
    }
    this.result = chosen !== undefined && chosen === this.top ? 'preferred' : 'spilled';
    for (let i = 0; i < this.keptCount; i++) this.kept[i] = undefined;
    return chosen;
  }

  /** The worker the key prefers among the eligible ones seen since `begin` (for tests and the benchmark). */
  get preferred(): W | undefined {
    return this.top;
  }
}

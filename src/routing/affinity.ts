import { mixHash, nameHash } from './affinity-key';

/** What an affinity decision came to (`switchboard_affinity_total{result}`). */
export type AffinityResult = 'preferred' | 'spilled' | 'none';

/** Free candidates remembered per decision, best first; past them the strategy's pick is taken. */
const KEPT = 4;

interface Hashed {
  readonly name: string;
  affinityHash: number;
}

/**
 * Consistent hashing with bounded loads (Mirrokni, Thorup, Zadimoghaddam 2017) over the eligible
 * workers the router finds in its one pass, as rendezvous hashing: each worker's weight for a key
 * is a mix of the key and the worker's name hash, and the key's order of workers ("the ring") is
 * by weight. The key goes to its highest-weighted worker unless that worker's load would pass the
 * bound `⌈load_factor × (sum of loads + 1) / workers⌉`, else to the next one within the bound. Only
 * workers of the best routing priority among the free ones take part: a cache hit does not make
 * up for a worse priority tier (a fallback pool), as the priority-first strategies order it. A
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
  private readonly keptPriority = new Float64Array(KEPT);
  private keptCount = 0;
  private bestPriority = Infinity;
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
    this.bestPriority = Infinity;
  }

  /**
   * Every eligible worker of the decision, with a free slot or not (all count towards the mean
   * load); `priority`: its effective routing priority (lower is preferred).
   */
  eligible(w: W, load: number, free: boolean, priority: number): void {
    this.count++;
    this.loadSum += load;
    if (w.affinityHash < 0) w.affinityHash = nameHash(w.name);
    const weight = mixHash(this.key, w.affinityHash);
    if (weight > this.topWeight) {
      this.topWeight = weight;
      this.top = w;
    }
    if (free) {
      if (priority < this.bestPriority) this.bestPriority = priority;
      this.keep(w, weight, load, priority);
    }
  }

  /** Inserts into the best-few list (sorted by weight, highest first); drops the lowest past KEPT. */
  private keep(w: W, weight: number, load: number, priority: number): void {
    let i = this.keptCount < KEPT ? this.keptCount++ : KEPT;
    if (i === KEPT && weight <= this.keptWeight[KEPT - 1]) return;
    if (i === KEPT) i = KEPT - 1;
    while (i > 0 && this.keptWeight[i - 1] < weight) {
      this.kept[i] = this.kept[i - 1];
      this.keptWeight[i] = this.keptWeight[i - 1];
      this.keptLoad[i] = this.keptLoad[i - 1];
      this.keptPriority[i] = this.keptPriority[i - 1];
      i--;
    }
    this.kept[i] = w;
    this.keptWeight[i] = weight;
    this.keptLoad[i] = load;
    this.keptPriority[i] = priority;
  }

  /** The key's worker within the bound, or undefined (the caller takes its strategy's pick: `spilled`). */
  end(): W | undefined {
    let chosen: W | undefined;
    if (this.count > 0) {
      const bound = Math.ceil((this.loadFactor * (this.loadSum + 1)) / this.count);
      for (let i = 0; i < this.keptCount; i++) {
        if (this.keptLoad[i] + 1 <= bound && this.keptPriority[i] <= this.bestPriority) {
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

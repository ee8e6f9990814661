import { TenantTurns } from './tenant-turns';

/** What the queue needs to know about a waiting request. */
export interface Queueable {
  /** When the request first arrived; it keeps its place by it (also when requeued) and ages from it. */
  readonly receivedAt: number;
  /** The model it waits for (the routing decision's model). */
  readonly targetModel: string;
  /** The provider whose bound and queue-depth figures it counts against. */
  readonly queueProvider: string;
  readonly tenant: string;
  /** 0 = high, 1 = normal, 2 = low. */
  readonly priority: number;
}

/** What the queue needs to know about a worker that has a free slot. */
export interface ServingWorker {
  readonly wildcard: boolean;
  readonly models: ReadonlySet<string>;
}

export type AdmitResult = 'admitted' | 'provider_full' | 'tenant_full';

/**
 * One waiting tenant's oldest request for a model at one level, as a replica publishes it: how long
 * it has waited (ms; a duration, so the replicas' clocks need not agree) and its tenant ('' = not
 * said: a replica of an earlier version).
 */
export type PublishedHead = [waitedMs: number, tenant: string];

const LEVELS = 3;
/** Tenants published per model and level (the first in this replica's order): bounds the message. */
export const HEADS_PER_LEVEL = 8;

/**
 * The level a request of base level `base` competes at after waiting `waitedMs`: one level higher
 * per aging period, never above high (0 = no aging). The one aging rule: this replica's queue and
 * the comparison with other replicas' requests (dispatch/cluster-order.ts) both use it.
 */
export function agedLevel(base: number, waitedMs: number, agingMs: number): number {
  if (agingMs <= 0 || base === 0) return base;
  return Math.max(0, base - Math.floor(waitedMs / agingMs));
}

/** Where a request stands: aged level, its tenant's last turn (and this replica's turn order), arrival. */
interface Place {
  level: number;
  at: number;
  seq: number;
  receivedAt: number;
}

/** Whether a request at (level, at, seq, receivedAt) goes before `b` (scalars: no allocation per list looked at). */
function aheadOf(level: number, at: number, seq: number, receivedAt: number, b: Place): boolean {
  if (level !== b.level) return level < b.level;
  if (at !== b.at) return at < b.at;
  if (seq !== b.seq) return seq < b.seq;
  return receivedAt < b.receivedAt;
}

function ahead(a: Place, b: Place): boolean {
  return aheadOf(a.level, a.at, a.seq, a.receivedAt, b);
}

/** Requests waiting for one model: per priority level, per tenant, oldest first. */
class ModelQueue<T extends Queueable> {
  readonly levels: Array<Map<string, T[]>> = Array.from({ length: LEVELS }, () => new Map<string, T[]>());
  size = 0;

  listFor(item: T): T[] {
    const level = this.levels[item.priority];
    let list = level.get(item.tenant);
    if (!list) level.set(item.tenant, (list = []));
    return list;
  }
}

/**
 * The order of requests waiting for a worker slot (pure: no timers, no metrics; AdmissionQueue adds those).
 *
 * - Bounds: per provider (`max_queue_len`) and per tenant (`max_queued`); requeued requests were
 *   admitted already and are never refused.
 * - Order, when a worker frees a slot: among the requests for models it serves and may take,
 *   the highest priority first; within a priority, tenants take turns (the tenant served least
 *   recently goes first), so one tenant's burst cannot starve another; within a tenant, oldest
 *   first. A request waiting longer than the aging period rises one level per period, so `low`
 *   never starves. In cluster mode a tenant's last turn is its latest at any replica (TenantTurns).
 * - Indexed by model, then level, then tenant: a decision looks only at the heads of the lists
 *   for the worker's models.
 */
export class QueueOrder<T extends Queueable = Queueable> {
  /** Whether a tenant has nothing waiting (made once: `takeFor` passes it on every request it serves). */
  private readonly idle = (tenant: string): boolean => this.tenantDepth(tenant) === 0;

  private readonly byModel = new Map<string, ModelQueue<T>>();
  private readonly depthByProvider = new Map<string, number>();
  private readonly depthByTenant = new Map<string, number>();
  private total = 0;
  constructor(
    private readonly agingMs = 0,
    /** Told a provider's new depth whenever it changes (the queue-depth gauge). */
    private readonly depthChanged: (provider: string, depth: number) => void = () => undefined,
    /** When each tenant was last served (rotation among tenants); shared with RemoteDepths in cluster mode. */
    private readonly turns = new TenantTurns(),
  ) {}

  /** Queues a new request unless its provider's or its tenant's share of the queue is full. */
  admit(item: T, providerBound: number, tenantBound = Infinity): AdmitResult {
    if (this.depth(item.queueProvider) >= providerBound) return 'provider_full';
    if (this.tenantDepth(item.tenant) >= tenantBound) return 'tenant_full';
    this.insert(item);
    return 'admitted';
  }

  /** Puts an already admitted request back where its arrival time places it (no bound). */
  requeue(item: T): void {
    this.insert(item);
  }

  remove(item: T): boolean {
    const mq = this.byModel.get(item.targetModel);
    const list = mq?.levels[item.priority].get(item.tenant);
    const i = list ? list.indexOf(item) : -1;
    if (i < 0) return false;
    this.removeAt(mq!, list!, i);
    return true;
  }

  /**
   * Removes and returns the next request, among those waiting for a model the worker serves, that
   * `accept` takes (the worker's capabilities, a pin): see the class comment for the order.
   */
  takeFor(worker: ServingWorker, accept: (item: T) => boolean, now: number, inOrder?: (item: T) => boolean): T | undefined {
    if (this.total === 0) return undefined;
    let best: (Place & { mq: ModelQueue<T>; list: T[]; index: number }) | undefined;
    const consider = (mq: ModelQueue<T> | undefined) => {
      if (!mq) return;
      for (let base = 0; base < LEVELS; base++) {
        for (const [tenant, list] of mq.levels[base]) {
          // The oldest acceptable request of the list: it has aged the most of the list.
          let index = 0;
          while (index < list.length && !accept(list[index])) index++;
          if (index === list.length) continue;
          // Held back for another replica's request (cluster mode): so is the rest of the list (the
          // same tenant, arrived later, aged no more), which is not looked at.
          if (inOrder !== undefined && !inOrder(list[index])) continue;
          const receivedAt = list[index].receivedAt;
          const level = this.effectiveLevel(base, now - receivedAt);
          const at = this.turns.at(tenant);
          const seq = this.turns.seq(tenant);
          if (!best || aheadOf(level, at, seq, receivedAt, best)) best = { mq, list, index, level, at, seq, receivedAt };
        }
      }
    };
    if (worker.wildcard || worker.models.size > this.byModel.size) {
      for (const [model, mq] of this.byModel) if (worker.wildcard || worker.models.has(model)) consider(mq);
    } else {
      for (const model of worker.models) consider(this.byModel.get(model));
    }
    if (!best) return undefined;
    const item = best.list[best.index];
    this.removeAt(best.mq, best.list, best.index);
    this.turns.served(item.tenant, now, this.idle);
    return item;
  }

  /** The requests waiting for `model` (a copy; admin and detach paths, never per request). */
  waitingFor(model: string): T[] {
    const mq = this.byModel.get(model);
    const out: T[] = [];
    if (mq) for (const level of mq.levels) for (const list of level.values()) out.push(...list);
    return out.sort((a, b) => a.receivedAt - b.receivedAt);
  }

  /** Models with requests waiting. */
  waitingModels(): IterableIterator<string> {
    return this.byModel.keys();
  }

  /** Removes every request counted against a provider, oldest first. */
  discard(provider: string): T[] {
    const out: T[] = [];
    for (const mq of this.byModel.values()) {
      for (const level of mq.levels) for (const list of level.values()) for (const item of list) if (item.queueProvider === provider) out.push(item);
    }
    for (const item of out) this.remove(item);
    return out.sort((a, b) => a.receivedAt - b.receivedAt);
  }

  /**
   * Every waiting request's place in its provider's line (1 = served next), in the order `takeFor`
   * serves them when the provider's workers take them one by one: effective level first, then the
   * round (a tenant's n-th request waits for the n-th turn of every tenant ahead of it), then the
   * tenants' turns, then arrival. Requests for different models of one provider share the line.
   * O(n log n) over the whole queue: meant for a periodic report, never for a single request.
   */
  positions(now: number): Map<T, number> {
    type Entry = { item: T; level: number; round: number; at: number; seq: number };
    const lines = new Map<string, Entry[]>();
    for (const mq of this.byModel.values()) {
      mq.levels.forEach((level, base) => {
        for (const [tenant, list] of level) {
          const [at, seq] = [this.turns.at(tenant), this.turns.seq(tenant)];
          for (const item of list) {
            let line = lines.get(item.queueProvider);
            if (!line) lines.set(item.queueProvider, (line = []));
            line.push({ item, level: this.effectiveLevel(base, now - item.receivedAt), round: 0, at, seq });
          }
        }
      });
    }
    const out = new Map<T, number>();
    for (const line of lines.values()) {
      // A tenant's requests at one level, oldest first, whatever their model: the n-th is in round n.
      line.sort((a, b) => a.level - b.level || a.item.tenant.localeCompare(b.item.tenant) || a.item.receivedAt - b.item.receivedAt);
      for (let i = 1; i < line.length; i++) {
        const [prev, cur] = [line[i - 1], line[i]];
        if (prev.level === cur.level && prev.item.tenant === cur.item.tenant) cur.round = prev.round + 1;
      }
      line.sort((a, b) => a.level - b.level || a.round - b.round || turnOrder(a, b) || a.item.receivedAt - b.item.receivedAt);
      line.forEach((entry, i) => out.set(entry.item, i + 1));
    }
    return out;
  }

  /** Providers with requests waiting. */
  waitingProviders(): string[] {
    return [...this.depthByProvider.keys()];
  }

  /** Every non-zero depth, per provider and per tenant (what a replica publishes in cluster mode). */
  depths(): { providers: Record<string, number>; tenants: Record<string, number> } {
    return { providers: Object.fromEntries(this.depthByProvider), tenants: Object.fromEntries(this.depthByTenant) };
  }

  /**
   * Per model with requests waiting, per base priority level, each tenant's oldest request (how long
   * it has waited, its tenant), at most HEADS_PER_LEVEL of them, the first in this replica's order:
   * what a replica publishes so the others keep the cluster's order. The readers age them and look
   * their tenants' turns up themselves, so what is published stays true while nothing changes.
   */
  heads(now: number): Record<string, PublishedHead[][]> {
    const out: Record<string, PublishedHead[][]> = {};
    for (const [model, mq] of this.byModel) {
      out[model] = mq.levels.map((lists, base) => {
        const places: Array<Place & { tenant: string }> = [];
        for (const [tenant, list] of lists) {
          const receivedAt = list[0].receivedAt;
          places.push({ tenant, level: this.effectiveLevel(base, now - receivedAt), at: this.turns.at(tenant), seq: this.turns.seq(tenant), receivedAt });
        }
        if (places.length > HEADS_PER_LEVEL) places.sort((a, b) => (ahead(a, b) ? -1 : ahead(b, a) ? 1 : 0)).length = HEADS_PER_LEVEL;
        return places.map((p): PublishedHead => [Math.max(0, now - p.receivedAt), p.tenant]);
      });
    }
    return out;
  }

  depth(provider: string): number {
    return this.depthByProvider.get(provider) ?? 0;
  }

  tenantDepth(tenant: string): number {
    return this.depthByTenant.get(tenant) ?? 0;
  }

  totalDepth(): number {
    return this.total;
  }

  /** Base level minus one per aging period waited, never above high. */
  private effectiveLevel(base: number, waitedMs: number): number {
    return agedLevel(base, waitedMs, this.agingMs);
  }

  private insert(item: T): void {
    let mq = this.byModel.get(item.targetModel);
    if (!mq) this.byModel.set(item.targetModel, (mq = new ModelQueue<T>()));
    const list = mq.listFor(item);
    let i = list.length;
    while (i > 0 && list[i - 1].receivedAt > item.receivedAt) i--;
    list.splice(i, 0, item);
    mq.size++;
    this.count(item, 1);
  }

  private removeAt(mq: ModelQueue<T>, list: T[], index: number): void {
    const [item] = list.splice(index, 1);
    if (list.length === 0) mq.levels[item.priority].delete(item.tenant);
    if (--mq.size === 0) this.byModel.delete(item.targetModel);
    this.count(item, -1);
  }

  private count(item: T, delta: number): void {
    this.depthChanged(item.queueProvider, bump(this.depthByProvider, item.queueProvider, delta));
    bump(this.depthByTenant, item.tenant, delta);
    this.total += delta;
  }
}

/** Least recently served tenant first; equal times in this replica's turn order. */
function turnOrder(a: { at: number; seq: number }, b: { at: number; seq: number }): number {
  return a.at !== b.at ? (a.at < b.at ? -1 : 1) : a.seq - b.seq;
}

function bump(map: Map<string, number>, key: string, delta: number): number {
  const n = (map.get(key) ?? 0) + delta;
  if (n === 0) map.delete(key);
  else map.set(key, n);
  return n;
}

import { agedLevel, HEADS_PER_LEVEL, PublishedHead, Queueable, ServingWorker } from './queue-order';
import { NEVER, TenantTurns } from './tenant-turns';

/** A queue's depths per provider and per tenant, as a replica publishes them (cluster mode). */
export interface QueueDepths {
  providers: Record<string, number>;
  tenants: Record<string, number>;
  /** Observed drain rate per provider, requests per ms (Retry-After advice counts the cluster's). */
  rates?: Record<string, number>;
  /** Per model, per base priority level (0 high … 2 low), each waiting tenant's oldest request (see QueueOrder.heads). */
  heads?: Record<string, PublishedHead[][]>;
  /** The publisher's latest turns: per tenant, how long ago it last served one of its requests from its queue, ms. */
  turns?: Record<string, number>;
}

/**
 * Within this margin, requests that arrived at different replicas count as arriving together, and
 * tenants served at different replicas as served together (what a replica knows of another's
 * requests is a few milliseconds old).
 */
export const CLUSTER_ORDER_SLACK_MS = 50;

/** Turns a replica publishes: its most recent ones (a tenant's older turns rarely decide anything). */
export const TURNS_PUBLISHED = 256;

const MAX_ENTRIES = 4096;
/** Waiting requests read from one replica's publication at most (all models and levels together). */
const MAX_HEADS = 1024;
const MAX_DEPTH = 1_000_000;
/** Longest wait or turn age read back (a day): a larger figure is that, not a clock from another era. */
const MAX_AGE_MS = 86_400_000;

/** Another replica's waiting request as this replica sees it: arrival on this replica's clock. */
interface RemoteHead {
  base: number;
  arrivedAt: number;
  /** '' = not said (a replica of an earlier version): its turn counts as the same as anyone's. */
  tenant: string;
}

/** A request's place in the cluster's order at one moment (this replica's clock). */
export interface Rank {
  /** Which published request it is (replica, model, level, tenant), to tell it again in the next publication. */
  key: string;
  level: number;
  /** Its tenant's last turn anywhere (NEVER: not served lately). */
  at: number;
  arrivedAt: number;
  tenant: string;
}

/**
 * Whether `a` is clearly ahead of `b` in the cluster's order: a higher level after aging; else, other
 * tenants, one served least recently by more than the slack; else an arrival earlier by more than
 * the slack. Within the slacks neither is ahead: each replica may serve its own.
 */
export function clearlyAhead(a: Rank, b: Rank): boolean {
  if (a.level !== b.level) return a.level < b.level;
  if (a.tenant !== b.tenant && a.tenant !== '' && b.tenant !== '') {
    if (a.at < b.at - CLUSTER_ORDER_SLACK_MS) return true;
    if (b.at < a.at - CLUSTER_ORDER_SLACK_MS) return false;
  }
  return a.arrivedAt < b.arrivedAt - CLUSTER_ORDER_SLACK_MS;
}

/**
 * What the other replicas' queues hold, as each last published it (cluster mode): the queue bounds
 * (`max_queue_len` per pool, a tenant's `max_queued`) count the whole cluster, and a freed slot can
 * be kept for a request ahead in the cluster's order. Empty in one process.
 */
export class RemoteDepths {
  private readonly byReplica = new Map<string, QueueDepths>();
  private providers = new Map<string, number>();
  private tenants = new Map<string, number>();
  private rates = new Map<string, number>();
  /** Per replica, per model: its waiting tenants' oldest requests. */
  private readonly heads = new Map<string, Map<string, RemoteHead[]>>();
  /** Per replica, per tenant: when (this replica's clock) it last served the tenant. */
  private readonly turnsByReplica = new Map<string, Map<string, number>>();

  /** Told after another replica's queue changed here (a held slot may be free to go now). */
  onChange: (() => void) | undefined;

  constructor(
    private readonly agingMs = 0,
    /** This replica's tenant turns; told the other replicas' latest ones. */
    private readonly turns = new TenantTurns(),
  ) {}

  /** A replica's latest depths (undefined: it left, or has nothing waiting). */
  set(replica: string, depths: QueueDepths | undefined, now = 0): void {
    this.setHeads(replica, depths?.heads, now);
    this.setTurns(replica, depths?.turns, now);
    this.setCounts(replica, depths);
    this.onChange?.();
  }

  private setCounts(replica: string, depths: QueueDepths | undefined): void {
    if (depths) this.byReplica.set(replica, depths);
    else if (!this.byReplica.delete(replica)) return;
    this.providers = new Map();
    this.tenants = new Map();
    this.rates = new Map();
    for (const d of this.byReplica.values()) {
      add(this.providers, d.providers);
      add(this.tenants, d.tenants);
      if (d.rates) add(this.rates, d.rates);
    }
  }

  clear(): void {
    this.byReplica.clear();
    this.heads.clear();
    this.turnsByReplica.clear();
    this.turns.setRemote(new Map());
    this.providers = new Map();
    this.tenants = new Map();
    this.rates = new Map();
  }

  /** Whether any other replica has requests waiting (one size check on the pull path). */
  get waiting(): boolean {
    return this.heads.size > 0;
  }

  /**
   * Every other replica's waiting requests for the models `worker` serves, ranked at `now`, wherever
   * the worker is connected: gathered once per pull of a worker with a free slot (published figures
   * only, never a Redis call; at most MAX_HEADS per replica).
   */
  rivalsFor(worker: ServingWorker, now: number, ignored?: ReadonlyMap<string, number>): Rank[] {
    const out: Rank[] = [];
    for (const [replica, byModel] of this.heads) {
      for (const [model, heads] of byModel) {
        if (!worker.wildcard && !worker.models.has(model)) continue;
        for (const h of heads) {
          const key = `${replica}\u0000${model}\u0000${h.base}\u0000${h.tenant}`;
          // A request this worker's slot was held for in vain (its replica did not send it): not again.
          const was = ignored?.get(key);
          if (was !== undefined && Math.abs(was - h.arrivedAt) <= CLUSTER_ORDER_SLACK_MS) continue;
          out.push({
            key,
            level: agedLevel(h.base, now - h.arrivedAt, this.agingMs),
            at: h.tenant === '' ? NEVER : this.turns.at(h.tenant),
            arrivedAt: h.arrivedAt,
            tenant: h.tenant,
          });
        }
      }
    }
    return out;
  }

  /** Whether a request of this replica is clearly behind one of `rivals` (then it must not take the slot first). */
  behind(item: Queueable, rivals: readonly Rank[], now: number): boolean {
    return this.aheadOf(item, rivals, now) !== undefined;
  }

  /** The first of `rivals` clearly ahead of a request of this replica, if any. */
  aheadOf(item: Queueable, rivals: readonly Rank[], now: number): Rank | undefined {
    const mine: Rank = {
      key: '',
      level: agedLevel(item.priority, now - item.receivedAt, this.agingMs),
      at: this.turns.at(item.tenant),
      arrivedAt: item.receivedAt,
      tenant: item.tenant,
    };
    return rivals.find((r) => clearlyAhead(r, mine));
  }

  private setHeads(replica: string, heads: QueueDepths['heads'], now: number): void {
    const byModel = new Map<string, RemoteHead[]>();
    for (const [model, levels] of Object.entries(heads ?? {})) {
      const list: RemoteHead[] = [];
      levels.forEach((entries, base) => {
        for (const [waited, tenant] of entries) list.push({ base, arrivedAt: now - waited, tenant });
      });
      if (list.length > 0) byModel.set(model, list);
    }
    if (byModel.size > 0) this.heads.set(replica, byModel);
    else this.heads.delete(replica);
  }

  /** A replica's turns, then every replica's latest per tenant for the local order. */
  private setTurns(replica: string, turns: QueueDepths['turns'], now: number): void {
    const entries = Object.entries(turns ?? {});
    if (entries.length > 0) this.turnsByReplica.set(replica, new Map(entries.map(([tenant, ago]) => [tenant, now - ago])));
    else if (!this.turnsByReplica.delete(replica)) return;
    const latest = new Map<string, number>();
    for (const byTenant of this.turnsByReplica.values()) {
      for (const [tenant, at] of byTenant) if (at > (latest.get(tenant) ?? NEVER)) latest.set(tenant, at);
    }
    this.turns.setRemote(latest);
  }

  /** The other replicas' drain rate for a provider, requests per ms. */
  rate(provider: string): number {
    return this.rates.size === 0 ? 0 : (this.rates.get(provider) ?? 0);
  }

  provider(name: string): number {
    return this.providers.size === 0 ? 0 : (this.providers.get(name) ?? 0);
  }

  tenant(name: string): number {
    return this.tenants.size === 0 ? 0 : (this.tenants.get(name) ?? 0);
  }
}

function add(into: Map<string, number>, from: Record<string, number>): void {
  for (const [k, n] of Object.entries(from)) into.set(k, (into.get(k) ?? 0) + n);
}

/** Published depths read back: plain non-negative numbers by name, bounded; undefined if malformed. */
export function readQueueDepths(raw: unknown): QueueDepths | undefined {
  if (!raw || typeof raw !== 'object') return undefined;
  const o = raw as Record<string, unknown>;
  const providers = counts(o.providers, true);
  const tenants = counts(o.tenants, true);
  const rates = o.rates === undefined ? {} : counts(o.rates, false);
  const heads = o.heads === undefined ? {} : readHeads(o.heads);
  const turns = o.turns === undefined ? {} : readTurns(o.turns);
  return providers && tenants && rates && heads && turns ? { providers, tenants, rates, heads, turns } : undefined;
}

/** Per model, up to three levels of [waited ms, tenant] (a bare number: an earlier version's oldest wait, tenant not said). */
function readHeads(v: unknown): Record<string, PublishedHead[][]> | undefined {
  if (!v || typeof v !== 'object' || Array.isArray(v)) return undefined;
  const entries = Object.entries(v as Record<string, unknown>);
  if (entries.length > MAX_ENTRIES) return undefined;
  const out: Record<string, PublishedHead[][]> = {};
  let room = MAX_HEADS;
  for (const [model, levels] of entries) {
    if (room <= 0) break;
    if (model.length > 512 || model === '__proto__' || !Array.isArray(levels) || levels.length > 3) continue;
    out[model] = levels.map((level: unknown): PublishedHead[] => {
      if (room <= 0) return [];
      if (!Array.isArray(level)) return age(level) === undefined ? [] : (room--, [[age(level)!, '']]);
      const heads: PublishedHead[] = [];
      for (const e of level.slice(0, Math.min(HEADS_PER_LEVEL, room))) {
        const waited = Array.isArray(e) && e.length === 2 ? age(e[0]) : undefined;
        if (waited !== undefined && typeof e[1] === 'string' && e[1].length > 0 && e[1].length <= 512) heads.push([waited, e[1]]);
      }
      room -= heads.length;
      return heads;
    });
  }
  return out;
}

/** Per tenant, ms since the publisher last served it. */
function readTurns(v: unknown): Record<string, number> | undefined {
  if (!v || typeof v !== 'object' || Array.isArray(v)) return undefined;
  const entries = Object.entries(v as Record<string, unknown>);
  // A replica publishes its TURNS_PUBLISHED latest turns: more is not a replica of ours.
  if (entries.length > TURNS_PUBLISHED) return undefined;
  const out: Record<string, number> = {};
  for (const [tenant, ago] of entries) {
    const ms = age(ago);
    if (tenant.length > 0 && tenant.length <= 512 && tenant !== '__proto__' && ms !== undefined) out[tenant] = ms;
  }
  return out;
}

/** A published duration: a finite non-negative number of ms, at most MAX_AGE_MS; undefined otherwise. */
function age(v: unknown): number | undefined {
  return typeof v === 'number' && Number.isFinite(v) && v >= 0 ? Math.min(v, MAX_AGE_MS) : undefined;
}

/** Numbers by name: whole depths (`whole`) or rates (at most 1 per ms, a million requests per second). */
function counts(v: unknown, whole: boolean): Record<string, number> | undefined {
  if (!v || typeof v !== 'object' || Array.isArray(v)) return undefined;
  const entries = Object.entries(v as Record<string, unknown>);
  if (entries.length > MAX_ENTRIES) return undefined;
  const out: Record<string, number> = {};
  for (const [k, n] of entries) {
    if (k.length > 512 || k === '__proto__' || typeof n !== 'number' || !Number.isFinite(n) || n <= 0) continue;
    out[k] = whole ? Math.min(MAX_DEPTH, Math.floor(n)) : Math.min(1000, n);
  }
  return out;
}

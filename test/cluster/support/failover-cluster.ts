import type { TestRedisServer } from '../../rate-limit/support';
import { eventually } from '../../support/http';
import { MockBackend } from './mock-backend';
import { ADMIN_TOKEN, ensureBuilt, GatewayProcess, logsOf, NodeProcess, WorkerProcess } from './processes';
import type { FreshSchema } from './postgres';
import { ClusterStore, startClusterStore } from './replicas';

export type ReplicaName = 'a' | 'b' | 'c';
export const REPLICAS: ReplicaName[] = ['a', 'b', 'c'];
/** The model every worker serves. */
export const SHARED_MODEL = 'shared-model';
/** The model only worker `x` serves. */
export const ownModel = (x: ReplicaName) => `only-${x}`;
/** Generous bounds: the tests wait for states, they never time them. */
export const WAIT = 20_000;

export interface WorkerView {
  name: string;
  replica: string;
  models: string[];
  status?: string;
}

/**
 * Three gateway processes (`gw-a`, `gw-b`, `gw-c`) on one Redis and a fresh PostgreSQL schema, and
 * three worker daemons (`worker-a` … first dialling its replica, then the next ones: `--proxy-url
 * a,b,c` rotated), each in front of its own mock backend, serving the shared model and one of its own.
 */
export class FailoverCluster {
  private store: ClusterStore | undefined;
  redis!: TestRedisServer;
  schema!: FreshSchema;
  readonly gw = {} as Record<ReplicaName, GatewayProcess>;
  readonly workers = {} as Record<ReplicaName, WorkerProcess>;
  readonly backends = {} as Record<ReplicaName, MockBackend>;

  async start(): Promise<void> {
    ensureBuilt();
    this.store = await startClusterStore('failover');
    ({ redis: this.redis, schema: this.schema } = this.store);
    for (const x of REPLICAS) {
      this.gw[x] = await GatewayProcess.create(`gw-${x}`, {
        DATABASE_URL: this.schema.url,
        CLUSTER_REDIS_URL: this.redis.url,
        // A request for a model no live worker serves waits this long (504 queue_timeout), not 30 s.
        QUEUE_TIMEOUT_SECS: '5',
      });
    }
    await Promise.all(REPLICAS.map((x) => this.gw[x].start()));
    await this.allMembers();
    for (const [i, x] of REPLICAS.entries()) {
      const backend = (this.backends[x] = new MockBackend(`worker-${x}`, [SHARED_MODEL, ownModel(x)]));
      await backend.start();
      const order = [...REPLICAS.slice(i), ...REPLICAS.slice(0, i)].map((r) => this.gw[r]);
      this.workers[x] = new WorkerProcess({ name: `worker-${x}`, gateways: order, backendUrl: backend.url, models: backend.models, maxConcurrency: 4 });
      this.workers[x].spawn();
    }
    for (const x of REPLICAS) await this.seesWorkers(x, 3);
  }

  async stop(): Promise<void> {
    for (const w of Object.values(this.workers)) await w.stop();
    for (const g of Object.values(this.gw)) await g.stop();
    for (const b of Object.values(this.backends)) await b.close();
    await this.store?.close();
  }

  get processes(): NodeProcess[] {
    return [...Object.values(this.gw), ...Object.values(this.workers)];
  }

  /** Runs `fn`; when it throws, every process's output is added to the error. */
  async withLogs<T>(fn: () => Promise<T>): Promise<T> {
    try {
      return await fn();
    } catch (e) {
      const err = e as Error;
      err.message += `\n\n${logsOf(this.processes)}`;
      throw err;
    }
  }

  async admin(x: ReplicaName, path: string): Promise<{ status: number; json: Record<string, unknown> }> {
    const res = await fetch(`${this.gw[x].url}${path}`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` }, signal: AbortSignal.timeout(5000) });
    const text = await res.text();
    return { status: res.status, json: text ? (JSON.parse(text) as Record<string, unknown>) : {} };
  }

  /** The workers replica `x` lists on /admin/workers. */
  async workersOn(x: ReplicaName): Promise<WorkerView[]> {
    const res = await this.admin(x, '/admin/workers');
    return res.status === 200 ? (res.json.data as WorkerView[]) : [];
  }

  /** Waits until replica `x` lists `count` workers. */
  async seesWorkers(x: ReplicaName, count: number): Promise<void> {
    await eventually(async () => (await this.workersOn(x).catch(() => [])).length === count, WAIT, `gw-${x} lists ${count} workers`);
  }

  /** Starts again any replica an earlier case left stopped, and waits until all see each other and every worker. */
  async allUp(): Promise<void> {
    // One an earlier case signalled may still be draining: let it finish first.
    for (const x of REPLICAS) if (this.gw[x].stopping) await this.gw[x].stop();
    await Promise.all(REPLICAS.filter((x) => !this.gw[x].running).map((x) => this.gw[x].start()));
    await this.allMembers();
    for (const x of REPLICAS) await this.seesWorkers(x, 3);
  }

  /** Waits until every running replica sees all running replicas as members. */
  async allMembers(): Promise<void> {
    const up = REPLICAS.filter((x) => this.gw[x].running);
    for (const x of up) {
      await eventually(
        async () => ((await this.admin(x, '/admin/cluster').catch(() => undefined))?.json.members as unknown[] | undefined)?.length === up.length,
        WAIT,
        `gw-${x} sees ${up.length} members`,
      );
    }
  }

  /** `/health`'s body on replica `x`. */
  async health(x: ReplicaName): Promise<Record<string, unknown>> {
    const res = await fetch(`${this.gw[x].url}/health`, { signal: AbortSignal.timeout(5000) });
    return (await res.json()) as Record<string, unknown>;
  }

  /** A gauge's value on replica `x`'s /metrics (the first sample). */
  async gauge(x: ReplicaName, name: string): Promise<number | undefined> {
    const text = await (await fetch(`${this.gw[x].url}/metrics`, { signal: AbortSignal.timeout(5000) })).text();
    const line = text.split('\n').find((l) => l.startsWith(`${name} `) || l.startsWith(`${name}{`));
    return line === undefined ? undefined : Number(line.split(' ').at(-1));
  }
}

import { Inject, Injectable, Logger, Optional } from '@nestjs/common';
import { BUS_TOPICS, ClusterBus } from '../cluster/cluster-bus.port';
import { CLOCK, Clock } from '../common/clock';
import { Errors, GatewayError } from '../common/gateway-error';
import { ConfigReloadService } from '../config/config-reload.service';
import { PoolStats } from '../providers/pool-stats';
import { Provider, ProvidersService } from '../providers/providers.service';
import { AdmissionQueue } from '../queue/admission-queue';
import { WorkerSession } from '../fleet/worker-session';
import { Fleet } from '../fleet/fleet.service';
import { Router } from '../routing/router.service';
import { NameCordon } from '../fleet/name-cordon';
import { RoutingConfigHolder } from '../routing/routing-config-holder';
import { readPoolReload, rejectedWithProblems } from './pool-reload';
import { poolCapacity, PoolSlots } from './pool-capacity';

/** `GET /v1/pools/:id/health`. */
export interface PoolHealth {
  id: string;
  /** At least one worker of the pool is connected (draining ones included). */
  live: boolean;
  /** The pool takes new requests: enabled, not cordoned, with a connected worker that is neither draining nor ejected. */
  ready: boolean;
  /** Cordoned: drained by an operator and refusing workers until `POST /v1/pools/:id/undrain`. */
  draining: boolean;
  enabled: boolean;
  cordon: { since: string; reason: string; deadline_ms: number } | null;
  metrics: {
    queue_depth: number;
    /** Requests running on the pool's workers (draining ones included). */
    in_flight: number;
    /** Concurrency of the workers that take new work (draining workers excluded): busy + free = total. */
    slots: PoolSlots;
    workers: number;
    requests_per_min: number;
    error_rate: number;
  };
}

/** `POST /v1/pools/:id/reload`: the pool's declarations after the reload. */
export interface PoolDeclarationsView {
  id: string;
  models: string[];
  aliases: Record<string, string>;
  capabilities: Provider['capabilities'];
}

/**
 * Pools (providers) as operators steer them: health, drain and undrain of a whole pool or of one
 * worker name, and the figures behind `/admin/stats`. Cordons live in memory (ProvidersService for
 * pools, WorkerRegistry for names) and are lifted by a gateway restart. In cluster mode every drain
 * and undrain is published on the cluster bus and applied by each replica to the workers connected
 * to it (cordon-sync.ts applies the others').
 */
@Injectable()
export class PoolsService {
  private readonly log = new Logger('Pools');
  private readonly startedAt: number;

  constructor(
    @Inject(CLOCK) private readonly clock: Clock,
    private readonly providers: ProvidersService,
    private readonly fleet: Fleet,
    private readonly queues: AdmissionQueue,
    private readonly stats: PoolStats,
    private readonly routing: RoutingConfigHolder,
    private readonly reloads: ConfigReloadService,
    private readonly router: Router,
    @Optional() private readonly bus?: ClusterBus,
  ) {
    this.startedAt = clock.now();
    providers.onDeleted((p) => {
      fleet.cordons.clear(p.name);
      stats.forget(p.name);
    });
  }

  providerOr404(id: string): Provider {
    const p = this.providers.get(id);
    if (!p) throw Errors.notFound('Pool', id);
    return p;
  }

  workerOr404(id: string): WorkerSession {
    const worker = this.fleet.sessions.get(id);
    if (!worker) throw Errors.notFound('Worker', id);
    return worker;
  }

  health(id: string): PoolHealth {
    const p = this.providerOr404(id);
    const now = this.clock.now();
    const workers = this.fleet.sessions.ofProvider(p.name);
    // The same slots and readiness as /v1/capabilities (pool-capacity.ts).
    const { slots, inFlight, serving } = poolCapacity(workers, (w) => this.router.health.of(w).isEjected(now));
    return {
      id: p.name,
      live: workers.size > 0,
      ready: p.enabled && !p.cordon && serving,
      draining: p.cordon !== undefined,
      enabled: p.enabled,
      cordon: p.cordon ? { since: new Date(p.cordon.since).toISOString(), reason: p.cordon.reason, deadline_ms: p.cordon.deadlineMs } : null,
      metrics: {
        queue_depth: this.queues.depth(p.name),
        in_flight: inFlight,
        slots,
        workers: workers.size,
        ...this.stats.rates(p.name),
      },
    };
  }

  list(): PoolHealth[] {
    return this.providers.list().map((p) => this.health(p.name));
  }

  /**
   * Cordons the pool and drains every worker of it (graceful_shutdown with the deadline); queued
   * requests are routed again (another pool, or `pool_unavailable`). Draining again keeps the
   * cordon's start and adds the models of workers that joined meanwhile (there are none: they are refused).
   */
  drain(id: string, deadlineMs: number, reason: string): PoolHealth {
    const p = this.providerOr404(id);
    this.cordonPool(p, deadlineMs, reason);
    this.bus?.publish(BUS_TOPICS.poolCordon, { pool: p.name, drain: true, deadlineMs, reason });
    return this.health(p.name);
  }

  /** Cordons the pool and drains its workers connected to this replica (a drain here, or published by another replica). */
  cordonPool(p: Provider, deadlineMs: number, reason: string): void {
    const workers = [...this.fleet.sessions.ofProvider(p.name)];
    const models = new Set(p.cordon?.models ?? []);
    for (const w of workers) for (const m of w.advertisedModels()) models.add(m);
    this.providers.cordon(p.name, { since: p.cordon?.since ?? this.clock.now(), reason, deadlineMs, models });
    this.fleet.drainPool(p.name, deadlineMs, reason);
    this.log.log(`pool "${p.name}" cordoned (${reason}): draining ${workers.length} worker(s) within ${deadlineMs} ms; new workers are refused until undrain`);
  }

  /**
   * Replaces the pool's declared models, pool aliases and capability declarations all at once:
   * everything is validated first (400 with every problem, nothing changed), then swapped in and
   * stored; if storing fails the previous declarations are restored (500). Runs one at a time
   * with configuration reloads.
   */
  reload(id: string, body: unknown): Promise<PoolDeclarationsView> {
    this.providerOr404(id); // an unknown pool is 404 before its body is judged
    return this.reloads.exclusive(async () => {
      const pool = this.providerOr404(id);
      const served = new Set<string>();
      for (const w of this.fleet.sessions.ofProvider(pool.name)) for (const m of w.models) served.add(m);
      const problems: string[] = [];
      const next = readPoolReload(
        body,
        {
          pool,
          servedModels: served,
          globalAliases: this.routing.current.aliases,
          aliasOwner: (alias) => this.providers.poolAlias(alias)?.provider.name,
        },
        problems,
      );
      if (problems.length > 0) throw rejectedWithProblems(`Reload of pool '${pool.name}'`, problems);
      let reloaded: Provider | undefined;
      try {
        reloaded = await this.providers.reloadPool(pool.name, next);
      } catch (e) {
        this.log.error(`pool "${pool.name}": storing the reloaded declarations failed, the previous ones stay: ${(e as Error).message}`);
        throw new GatewayError('internal_error', `Pool '${pool.name}' could not be stored; its previous models, aliases and capabilities stay`);
      }
      if (!reloaded) throw Errors.notFound('Pool', id);
      this.log.log(
        `pool "${pool.name}" reloaded: ${next.models.length} model(s), ${Object.keys(next.aliases).length} alias(es), capabilities for ${Object.keys(next.capabilities).length} model(s)`,
      );
      return this.declarations(reloaded);
    });
  }

  declarations(p: Provider): PoolDeclarationsView {
    return { id: p.name, models: [...p.models], aliases: { ...p.aliases }, capabilities: p.capabilities };
  }

  /** Lifts the pool's cordon: its workers may register again (their daemons retry within about a minute). */
  undrain(id: string): PoolHealth {
    const p = this.providerOr404(id);
    if (p.cordon) this.log.log(`pool "${p.name}" undrained: workers may register again`);
    this.providers.uncordon(p.name);
    this.bus?.publish(BUS_TOPICS.poolCordon, { pool: p.name, drain: false });
    return this.health(p.name);
  }

  /**
   * Cordons the worker's name within its provider and drains every live connection with that name:
   * they finish within the deadline, and reconnections are refused until undrain. In cluster mode
   * every replica does the same for the name (the worker may be connected to another replica: only
   * its id, provider and name are needed).
   */
  drainWorker(worker: Pick<WorkerSession, 'id' | 'provider' | 'name'>, timeoutMs: number, reason: string): void {
    this.cordonName(worker.provider, worker.name, worker.id, timeoutMs, reason);
    this.bus?.publish(BUS_TOPICS.workerCordon, { provider: worker.provider, name: worker.name, workerId: worker.id, drain: true, timeoutMs, reason });
  }

  /**
   * Cordons a worker name (under `workerId`, the connection an operator named) and drains its
   * connections to this replica: a drain here, or one published by another replica (whose worker
   * is not connected here; the cordon still refuses it if it reconnects here).
   */
  cordonName(provider: string, name: string, workerId: string, timeoutMs: number, reason: string): void {
    const now = this.clock.now();
    this.fleet.cordons.cordon(provider, name, workerId, reason, now);
    for (const w of [...this.fleet.sessions.ofProvider(provider)]) {
      if (w.name !== name) continue;
      this.fleet.cordons.cordon(w.provider, w.name, w.id, reason, now);
      this.fleet.drain(w, timeoutMs, reason);
    }
    this.log.log(`worker name "${name}" of provider "${provider}" cordoned (${reason}): reconnections are refused until undrain`);
  }

  /**
   * Lifts the cordon of the worker's name. The id may be a live worker's or one drained into a
   * cordon that has since disconnected; any other id is 404.
   */
  undrainWorker(id: string): { id: string; provider: string; name: string; undrained: boolean; connected: boolean } {
    const live = this.fleet.sessions.get(id);
    const cordon: Pick<NameCordon, 'provider' | 'name'> | undefined = live ?? this.fleet.cordons.ofWorkerId(id);
    if (!cordon) throw Errors.notFound('Worker', id);
    const undrained = this.fleet.cordons.uncordon(cordon.provider, cordon.name);
    this.bus?.publish(BUS_TOPICS.workerCordon, { provider: cordon.provider, name: cordon.name, drain: false });
    if (undrained) this.log.log(`worker name "${cordon.name}" of provider "${cordon.provider}" undrained: it may register again`);
    return { id, provider: cordon.provider, name: cordon.name, undrained, connected: live !== undefined };
  }

  /** Lifts a worker name's cordon (an undrain published by another replica); false when it was not cordoned. */
  uncordonName(provider: string, name: string): boolean {
    return this.fleet.cordons.uncordon(provider, name);
  }

  /** What is cordoned now, for operators (`GET /admin/cordons`). */
  cordons() {
    return {
      pools: this.providers
        .list()
        .filter((p) => p.cordon)
        .map((p) => ({ pool: p.name, since: new Date(p.cordon!.since).toISOString(), reason: p.cordon!.reason, deadline_ms: p.cordon!.deadlineMs })),
      workers: this.fleet.cordons.list().map((c) => ({
        provider: c.provider,
        name: c.name,
        since: new Date(c.since).toISOString(),
        reason: c.reason,
        worker_ids: [...c.workerIds],
      })),
    };
  }

  /** `GET /admin/stats`: per pool, since the gateway started. */
  snapshot() {
    const pools = this.providers.list().map((p) => {
      const c = this.stats.of(p.name);
      let inFlight = 0;
      for (const w of this.fleet.sessions.ofProvider(p.name)) inFlight += w.assigned.size;
      return {
        pool: p.name,
        draining: p.cordon !== undefined,
        workers: this.fleet.sessions.ofProvider(p.name).size,
        queue_depth: this.queues.depth(p.name),
        in_flight: inFlight,
        served: c.served,
        cancelled: c.cancelled,
        rejected_by_code: Object.fromEntries(c.rejectedByCode),
        errors_by_code: Object.fromEntries(c.errorsByCode),
        queue_wait_ms: { avg: this.queues.stats.avgWaitMs(p.name), p95: this.queues.stats.p95WaitMs(p.name) },
        tokens: { prompt: c.promptTokens, completion: c.completionTokens, total: c.promptTokens + c.completionTokens },
        ...this.stats.rates(p.name),
        latency_ms: this.stats.latency(p.name),
        history: this.stats.history(p.name),
      };
    });
    const u = this.stats.unrouted;
    return {
      since: new Date(this.startedAt).toISOString(),
      pools,
      unrouted: { rejected_by_code: Object.fromEntries(u.rejectedByCode), errors_by_code: Object.fromEntries(u.errorsByCode) },
      overall: this.stats.overall(),
      recent_errors: this.stats.recentErrors(),
      watchdogs: { ...this.stats.watchdogs },
    };
  }
}

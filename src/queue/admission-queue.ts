import { Inject, Injectable } from '@nestjs/common';
import { APP_CONFIG, AppConfig } from '../config';
import { CLOCK, Clock, TimerHandle } from '../common/clock';
import { Errors, GatewayError } from '../common/gateway-error';
import { MetricsService } from '../observability/metrics.service';
import { AdmitResult, Queueable, QueueOrder, ServingWorker } from './queue-order';
import { QueueStats } from './queue-stats';
import { ConcurrencyCaps } from './concurrency-caps';
import { QueueDepths, RemoteDepths, TURNS_PUBLISHED } from './remote-depths';
import { TenantTurns } from './tenant-turns';

export type { AdmitResult, Queueable, ServingWorker } from './queue-order';

/**
 * Requests waiting for a worker slot: admission against the bounds, the order (QueueOrder), each
 * waiting request's timer, the per-provider depth gauge and the retry hints drawn from the
 * observed drain rate. Synchronous and in memory; one timer per waiting request.
 */
@Injectable()
export class AdmissionQueue<T extends Queueable = Queueable> {
  private readonly order: QueueOrder<T>;
  private readonly timers = new Map<T, TimerHandle>();
  /** Drain rate and waits, per provider (Retry-After advice, operators' figures). */
  readonly stats = new QueueStats();
  /** `max_concurrent` of keys and tenants: requests over it wait here (see ConcurrencyGate in dispatch/). */
  readonly caps = new ConcurrencyCaps<T>();
  /** When each tenant was last served: here, and (cluster mode) at the other replicas. */
  private readonly turns = new TenantTurns();
  /** Cluster mode: what the other replicas' queues hold; the bounds count them too, the order ranks them. */
  readonly elsewhere: RemoteDepths;
  /** Cluster mode: told when a depth changed, so the replica publishes its depths. */
  onDepthChange: (() => void) | undefined;

  constructor(
    @Inject(APP_CONFIG) config: Pick<AppConfig, 'queue'>,
    @Inject(CLOCK) private readonly clock: Clock,
    metrics: MetricsService,
  ) {
    this.order = new QueueOrder<T>(
      config.queue.agingMs,
      (provider, depth) => {
        metrics.setQueueDepth(provider, depth);
        this.onDepthChange?.();
      },
      this.turns,
    );
    this.elsewhere = new RemoteDepths(config.queue.agingMs, this.turns);
  }

  /** Queues a new request unless its provider's or its tenant's share of the queue is full. */
  admit(item: T, providerBound: number, tenantBound = Infinity): AdmitResult {
    // In a cluster the bounds hold for every replica's queue together (as last published).
    return this.order.admit(item, providerBound - this.elsewhere.provider(item.queueProvider), tenantBound - this.elsewhere.tenant(item.tenant));
  }

  /**
   * What this replica publishes of its queue (cluster mode only): every non-zero depth per provider
   * and tenant, drain rates, the waiting tenants' oldest requests per model and level, its latest
   * tenant turns. Waits and turns as durations: the replicas' clocks need not agree.
   */
  depths(): QueueDepths {
    const now = this.clock.now();
    return { ...this.order.depths(), rates: this.stats.rates(now), heads: this.order.heads(now), turns: this.turns.recent(now, TURNS_PUBLISHED) };
  }

  /** Puts an already admitted request back where its arrival time places it (no bound). */
  requeue(item: T): void {
    this.order.requeue(item);
  }

  /** Calls `onTimeout` if the request is still waiting after `ms` (replaces an earlier timer). */
  expireAfter(item: T, ms: number, onTimeout: () => void): void {
    this.stopTimer(item);
    this.timers.set(
      item,
      this.clock.setTimeout(
        () => {
          this.timers.delete(item);
          if (this.order.remove(item)) onTimeout();
        },
        Math.max(0, ms),
      ),
    );
  }

  remove(item: T): boolean {
    this.stopTimer(item);
    return this.order.remove(item);
  }

  /** The next request a worker with a free slot may take (see QueueOrder.takeFor for the order). */
  takeFor(worker: ServingWorker, accept: (item: T) => boolean, now: number, inOrder?: (item: T) => boolean): T | undefined {
    const item = this.order.takeFor(worker, accept, now, inOrder);
    if (item) this.stopTimer(item);
    return item;
  }

  /** Removes every request counted against a provider, oldest first. */
  discard(provider: string): T[] {
    const out = this.order.discard(provider);
    for (const item of out) this.stopTimer(item);
    return out;
  }

  /** The requests waiting for `model` (a copy; admin and detach paths, never per request). */
  waitingFor(model: string): T[] {
    return this.order.waitingFor(model);
  }

  waitingModels(): IterableIterator<string> {
    return this.order.waitingModels();
  }

  /** Every waiting request's place in its provider's line (periodic reports only). */
  positions(now: number): Map<T, number> {
    return this.order.positions(now);
  }

  /** Providers with requests waiting. */
  waitingProviders(): string[] {
    return this.order.waitingProviders();
  }

  depth(provider: string): number {
    return this.order.depth(provider);
  }

  tenantDepth(tenant: string): number {
    return this.order.tenantDepth(tenant);
  }

  totalDepth(): number {
    return this.order.totalDepth();
  }

  /** How long a new arrival at `provider` should wait before retrying, from the observed drain rate. */
  retryAfterMs(provider: string): number {
    return this.stats.retryAfterMs(provider, this.depth(provider) + this.elsewhere.provider(provider) + 1, this.clock.now(), this.elsewhere.rate(provider));
  }

  /** 429 for a request its provider's (or its tenant's) share of the queue cannot take, with a retry hint. */
  fullError(item: T, tenantShare: boolean): GatewayError {
    const provider = item.queueProvider;
    const depth = this.depth(provider) + this.elsewhere.provider(provider);
    const ahead = tenantShare ? this.tenantDepth(item.tenant) + this.elsewhere.tenant(item.tenant) : depth;
    const retryMs = this.stats.retryAfterMs(provider, ahead + 1, this.clock.now(), this.elsewhere.rate(provider));
    return Errors.queueFull(retryMs, depth, this.stats.avgWaitMs(provider), tenantShare);
  }

  private stopTimer(item: T): void {
    const timer = this.timers.get(item);
    if (timer === undefined) return;
    this.clock.clearTimeout(timer);
    this.timers.delete(item);
  }
}

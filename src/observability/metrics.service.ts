import { Injectable } from '@nestjs/common';
import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import { LabelBudget } from './label-budget';
import { DeferredSeries, HistogramSeries } from './metrics-registry';
import { AuthMetrics, UsageMetrics } from './usage-and-auth-metrics';
import { RunnerFigures, RunnerMetrics } from './runner-metrics';

const MAX_MODEL_LABELS = 500;
const MAX_TENANT_LABELS = 200;

export type SlotState = 'busy' | 'free' | 'held';
export type TokenKind = 'prompt' | 'completion';
export type { AdminAuthFailureReason, ClientAuthFailureReason, UsageDropReason } from './usage-and-auth-metrics';

const PREFIX = 'switchboard_';

/** Whole requests and first bytes: LLM generations run from milliseconds to several minutes. */
const LATENCY_BUCKETS = [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 30, 60, 120, 300, 600];
const FIRST_BYTE_BUCKETS = [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 30, 60, 120, 300];
const QUEUE_WAIT_BUCKETS = [0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300];

/**
 * The relay's view of metrics: one method per event, so call sites stay one line and the
 * Prometheus details (names, labels, buckets) live here.
 *
 * Metrics are registered in the given registry (the app's own, see createMetricsRegistry);
 * `new MetricsService()` gets a private registry, which keeps unit tests independent.
 */
/** What the cluster gauges read (a structural type: observability does not import cluster/). */
export interface ClusterGaugeSource {
  degraded(): boolean;
  members(): readonly unknown[];
}

/** One worker's KV-cache usage for `switchboard_worker_kv_cache_usage_ratio`. */
export interface KvCacheReading {
  provider: string;
  worker: string;
  ratio: number;
}

@Injectable()
export class MetricsService {
  /** The usage recorder's series. */
  readonly usage: UsageMetrics;
  /** Refused authentications (workers, admin token, API keys). */
  readonly auth: AuthMetrics;
  private readonly requests: Counter<'provider' | 'model' | 'endpoint' | 'status' | 'tenant'>;
  private readonly requestDuration: Histogram<'provider' | 'model'>;
  private readonly firstByte: Histogram<'provider' | 'model'>;
  private readonly queueDepth: Gauge<'provider'>;
  private readonly queueWaitSeconds: Histogram<'provider'>;
  private readonly workersConnected: Gauge<'provider'>;
  private readonly workerSlots: Gauge<'provider' | 'state'>;
  private readonly tokensTotal: Counter<'provider' | 'model' | 'tenant' | 'kind'>;
  private readonly workerBusySeconds: Counter<'pool' | 'tenant'>;
  private readonly requeues: Counter<'provider'>;
  private readonly cancellations: Counter<'reason'>;
  private readonly rejections: Counter<'code'>;
  private readonly workerEjections: Counter<'provider'>;
  private readonly translatedTotal: Counter<'kind' | 'provider'>;
  private readonly affinityTotal: Counter<'result'>;
  private readonly kvCacheUsage: Gauge<'provider' | 'worker'>;
  /** Lists each reporting worker's KV-cache usage at scrape time (routing/cache-gauges.ts). */
  private kvCacheCollector: (() => Iterable<KvCacheReading>) | undefined;
  private readonly rateLimitedTotal: Counter<'tenant' | 'kind'>;
  private readonly heartbeatTimeouts: Counter<'provider'>;
  private readonly redisUp: Gauge;
  private readonly rateLimiterFallbacks: Counter;
  private readonly cacheResults: Counter<'provider' | 'model' | 'result'>;
  private readonly cacheTokensReused: Counter<'provider' | 'model'>;
  /** GPU memory and KV cache from runner documents, cache hit ratio per model (runner-metrics.ts). */
  private readonly runners: RunnerMetrics;
  /** Cluster membership (src/cluster), read at scrape time; unset = one process, no cluster series. */
  private clusterSource: ClusterGaugeSource | undefined;
  /** Fills the slot gauges at scrape time, so no request pays for walking the workers. */
  private slotCollector: (() => void) | undefined;
  /** Client-chosen label values are capped (see LabelBudget). */
  private readonly models = new LabelBudget(MAX_MODEL_LABELS);
  private readonly tenants = new LabelBudget(MAX_TENANT_LABELS);
  /** Per-request updates, applied when scraped (see DeferredSeries): requests, tokens, queue depth. */
  private readonly pendingRequests = new DeferredSeries<'provider' | 'model' | 'endpoint' | 'status' | 'tenant'>('add');
  private readonly pendingTokens = new DeferredSeries<'provider' | 'model' | 'tenant' | 'kind'>('add');
  private readonly pendingQueueDepth = new DeferredSeries<'provider'>('set');
  private readonly pendingWorkerBusy = new DeferredSeries<'pool' | 'tenant'>('add');
  private readonly pendingAffinity = new DeferredSeries<'result'>('add');
  /** Per-request observations, by series (see HistogramSeries). */
  private readonly durationSeries: HistogramSeries<'provider' | 'model'>;
  private readonly firstByteSeries: HistogramSeries<'provider' | 'model'>;
  private readonly queueWaitSeries: HistogramSeries<'provider'>;

  constructor(readonly registry: Registry = new Registry()) {
    const registers = [registry];
    this.requests = new Counter({
      name: `${PREFIX}requests_total`,
      help: 'Client requests finished, by provider, model, endpoint, HTTP status and tenant.',
      labelNames: ['provider', 'model', 'endpoint', 'status', 'tenant'],
      registers,
      collect: () => this.pendingRequests.flush((labels, n) => this.requests.inc(labels, n)),
    });
    this.requestDuration = new Histogram({
      name: `${PREFIX}request_duration_seconds`,
      help: 'Time from request arrival to the last byte sent to the client.',
      labelNames: ['provider', 'model'],
      buckets: LATENCY_BUCKETS,
      registers,
    });
    this.firstByte = new Histogram({
      name: `${PREFIX}time_to_first_byte_seconds`,
      help: 'Time from request arrival to the first response byte (first token when streaming).',
      labelNames: ['provider', 'model'],
      buckets: FIRST_BYTE_BUCKETS,
      registers,
    });
    this.queueDepth = new Gauge({
      name: `${PREFIX}queue_depth`,
      help: 'Requests waiting in the provider queue for a free worker slot.',
      labelNames: ['provider'],
      registers,
      collect: () => this.pendingQueueDepth.flush((labels, depth) => this.queueDepth.set(labels, depth)),
    });
    this.queueWaitSeconds = new Histogram({
      name: `${PREFIX}queue_wait_seconds`,
      help: 'Time a request waited in the provider queue: 0 when a worker took it at once; requests that timed out in the queue count too.',
      labelNames: ['provider'],
      buckets: QUEUE_WAIT_BUCKETS,
      registers,
    });
    this.workersConnected = new Gauge({
      name: `${PREFIX}workers_connected`,
      help: 'Workers with a registered WebSocket connection.',
      labelNames: ['provider'],
      registers,
    });
    this.workerSlots = new Gauge({
      name: `${PREFIX}worker_slots`,
      help: 'Worker concurrency slots by state (busy, free, held).',
      labelNames: ['provider', 'state'],
      registers,
      collect: () => this.slotCollector?.(),
    });
    this.tokensTotal = new Counter({
      name: `${PREFIX}tokens_total`,
      help: 'Tokens reported by workers, by provider, model, tenant and kind (prompt, completion).',
      labelNames: ['provider', 'model', 'tenant', 'kind'],
      registers,
      collect: () => this.pendingTokens.flush((labels, n) => this.tokensTotal.inc(labels, n)),
    });
    this.workerBusySeconds = new Counter({
      name: `${PREFIX}worker_busy_seconds_total`,
      help: "Worker time requests held, by pool and tenant: each request's slot time as a share of its worker (seconds / max_concurrent).",
      labelNames: ['pool', 'tenant'],
      registers,
      collect: () => this.pendingWorkerBusy.flush((labels, seconds) => this.workerBusySeconds.inc(labels, seconds)),
    });
    this.requeues = new Counter({
      name: `${PREFIX}requeues_total`,
      help: 'Requests put back in the queue to be retried on another worker.',
      labelNames: ['provider'],
      registers,
    });
    this.cancellations = new Counter({
      name: `${PREFIX}cancellations_total`,
      help: 'Requests cancelled, by reason (client disconnect, timeout, shutdown, ...).',
      labelNames: ['reason'],
      registers,
    });
    this.rejections = new Counter({
      name: `${PREFIX}rejections_total`,
      help: 'Requests refused before dispatch, by error code.',
      labelNames: ['code'],
      registers,
    });
    this.workerEjections = new Counter({
      name: `${PREFIX}worker_ejections_total`,
      help: 'Workers taken out of rotation after failing requests in a row (passive outlier detection).',
      labelNames: ['provider'],
      registers,
    });
    this.translatedTotal = new Counter({
      name: `${PREFIX}translated_requests_total`,
      help: 'Requests served by translation (their worker lacked the endpoint asked for): `anthropic-messages`, `openai-responses` or `count-tokens` (through /tokenize), by the pool that served them.',
      labelNames: ['kind', 'provider'],
      registers,
    });
    this.affinityTotal = new Counter({
      name: `${PREFIX}affinity_total`,
      help: "Routing decisions by cache affinity outcome: the key's preferred worker, another within the load bound or the strategy's pick (spilled), or no key / affinity off (none).",
      labelNames: ['result'],
      registers,
      collect: () => this.pendingAffinity.flush((labels, n) => this.affinityTotal.inc(labels, n)),
    });
    // Every outcome's series exists from the start, so a dashboard sees zeros, not gaps.
    for (const result of ['preferred', 'spilled', 'none'] as const) this.affinityTotal.inc({ result }, 0);
    this.kvCacheUsage = new Gauge({
      name: `${PREFIX}worker_kv_cache_usage_ratio`,
      help: 'KV-cache usage of the backend behind each worker (0-1), as its daemon last reported it (negotiated cache_stats).',
      labelNames: ['provider', 'worker'],
      registers,
      collect: () => {
        if (!this.kvCacheCollector) return;
        // Afresh each scrape: workers gone since the last one drop out.
        this.kvCacheUsage.reset();
        for (const r of this.kvCacheCollector()) this.kvCacheUsage.set({ provider: r.provider, worker: r.worker }, r.ratio);
      },
    });
    this.heartbeatTimeouts = new Counter({
      name: `${PREFIX}worker_heartbeat_timeouts_total`,
      help: 'Worker connections the gateway closed because the worker went silent for HEARTBEAT_TIMEOUT_SECS.',
      labelNames: ['provider'],
      registers,
    });
    this.redisUp = new Gauge({
      name: `${PREFIX}redis_up`,
      help: "Whether the rate limiter's Redis answers (1) or not (0); stays 0 when REDIS_URL is not set.",
      registers,
    });
    this.rateLimiterFallbacks = new Counter({
      name: `${PREFIX}rate_limiter_fallbacks_total`,
      help: 'Rate-limit decisions taken by the local in-memory limiter because Redis was down.',
      registers,
    });
    this.rateLimitedTotal = new Counter({
      name: `${PREFIX}rate_limited_total`,
      help: 'Requests refused at admission by a rate limit or budget, by tenant and kind (requests, tokens, budget).',
      labelNames: ['tenant', 'kind'],
      registers,
    });
    this.cacheResults = new Counter({
      name: `${PREFIX}cache_hits_total`,
      help: 'Responses whose backend reported a cache result (x-cache-hit), by provider, model and result (hit, miss).',
      labelNames: ['provider', 'model', 'result'],
      registers,
    });
    this.cacheTokensReused = new Counter({
      name: `${PREFIX}cache_tokens_reused_total`,
      help: 'Prompt tokens the backend reported as served from its cache (x-cache-tokens-reused).',
      labelNames: ['provider', 'model'],
      registers,
    });
    this.runners = new RunnerMetrics(registry, PREFIX, this.models);
    this.durationSeries = new HistogramSeries(this.requestDuration);
    this.firstByteSeries = new HistogramSeries(this.firstByte);
    this.queueWaitSeries = new HistogramSeries(this.queueWaitSeconds);
    this.usage = new UsageMetrics(registers);
    this.auth = new AuthMetrics(registers);
  }

  /**
   * Registers the cluster gauges, read at scrape time from membership. ClusterModule calls it in
   * cluster mode only: one process exposes no cluster series (they would say nothing).
   */
  setClusterSource(source: ClusterGaugeSource): void {
    const registered = this.clusterSource !== undefined;
    this.clusterSource = source;
    if (registered) return;
    const registers = [this.registry];
    const degraded: Gauge = new Gauge({
      name: `${PREFIX}cluster_degraded`,
      help: "1 while this replica cannot reach the cluster's Redis and serves its own workers alone, else 0.",
      registers,
      collect: () => degraded.set(this.clusterSource?.degraded() ? 1 : 0),
    });
    const members: Gauge = new Gauge({
      name: `${PREFIX}cluster_members`,
      help: 'Live gateway replicas as this replica sees them, itself included (1 while degraded).',
      registers,
      collect: () => members.set(this.clusterSource?.members().length ?? 1),
    });
  }

  requestFinished(l: { provider: string; model: string; endpoint: string; status: number; tenant: string }, durationSec: number): void {
    const model = this.models.label(l.model);
    const tenant = this.tenants.label(l.tenant);
    const { provider, endpoint, status } = l;
    this.pendingRequests.update(
      `${provider}\0${model}\0${endpoint}\0${status}\0${tenant}`,
      () => ({ provider, model, endpoint, status: String(status), tenant }),
      1,
    );
    this.durationSeries.observe(`${provider}\0${model}`, () => ({ provider, model }), durationSec);
  }

  timeToFirstByte(provider: string, model: string, seconds: number): void {
    const m = this.models.label(model);
    this.firstByteSeries.observe(`${provider}\0${m}`, () => ({ provider, model: m }), seconds);
  }

  setQueueDepth(provider: string, depth: number): void {
    this.pendingQueueDepth.update(provider, () => ({ provider }), depth);
  }

  queueWait(provider: string, seconds: number): void {
    this.queueWaitSeries.observe(provider, () => ({ provider }), seconds);
  }

  setWorkersConnected(provider: string, count: number): void {
    this.workersConnected.set({ provider }, count);
  }

  /** Registers what sets the slot gauges (through setWorkerSlots) whenever metrics are scraped. */
  collectSlotsWith(collector: () => void): void {
    this.slotCollector = collector;
  }

  rateLimited(tenant: string, kind: string): void {
    this.rateLimitedTotal.inc({ tenant: this.tenants.label(tenant), kind });
  }

  affinityDecision(result: 'preferred' | 'spilled' | 'none'): void {
    this.pendingAffinity.update(result, () => ({ result }), 1);
  }

  /** Registers what fills `worker_kv_cache_usage_ratio` when metrics are scraped. */
  collectKvCacheWith(collector: () => Iterable<KvCacheReading>): void {
    this.kvCacheCollector = collector;
  }

  /** A request ended after its last worker served it translated. */
  translated(kind: string, provider: string): void {
    this.translatedTotal.inc({ kind, provider });
  }

  workerEjection(provider: string): void {
    this.workerEjections.inc({ provider });
  }

  /** The gateway closed a registered worker's connection after hearing nothing for the heartbeat timeout. */
  workerHeartbeatTimeout(provider: string): void {
    this.heartbeatTimeouts.inc({ provider });
  }

  setWorkerSlots(provider: string, state: SlotState, count: number): void {
    this.workerSlots.set({ provider, state }, count);
  }

  tokens(provider: string, model: string, tenant: string, kind: TokenKind, count: number): void {
    if (!(count > 0)) return;
    const m = this.models.label(model);
    const t = this.tenants.label(tenant);
    this.pendingTokens.update(`${provider}\0${m}\0${t}\0${kind}`, () => ({ provider, model: m, tenant: t, kind }), count);
  }

  /** A request's slot on a worker of `pool`, as a share of the worker (docs/enterprise.md#gpu-time-chargeback). */
  workerBusy(pool: string, tenant: string, seconds: number): void {
    if (!(seconds > 0)) return;
    const t = this.tenants.label(tenant);
    this.pendingWorkerBusy.update(`${pool}\0${t}`, () => ({ pool, tenant: t }), seconds);
  }

  requeue(provider: string): void {
    this.requeues.inc({ provider });
  }

  cancellation(reason: string): void {
    this.cancellations.inc({ reason });
  }

  rejection(code: string): void {
    this.rejections.inc({ code });
  }

  /** The rate limiter's Redis answers (or not); see RedisRateLimiter. */
  setRedisUp(up: boolean): void {
    this.redisUp.set(up ? 1 : 0);
  }

  /** One rate-limit decision taken locally because Redis was down. */
  rateLimiterFallback(): void {
    this.rateLimiterFallbacks.inc();
  }

  /**
   * What a worker's response said about the backend's cache (see usage/cache-headers.ts): a hit or
   * a miss when it said either, and the prompt tokens it reused when it said how many.
   */
  backendCache(provider: string, model: string, report: { hit?: boolean; tokensReused?: number }): void {
    if (report.hit === undefined && report.tokensReused === undefined) return;
    const labels = { provider, model: this.models.label(model) };
    if (report.hit !== undefined) this.cacheResults.inc({ ...labels, result: report.hit ? 'hit' : 'miss' });
    if (report.hit !== undefined) this.runners.cacheResult(model, report.hit);
    if (report.tokensReused !== undefined) this.cacheTokensReused.inc(labels, report.tokensReused);
  }

  /** Reads the workers' runner figures at scrape time (GPU memory, KV cache). */
  collectRunnersWith(collector: () => RunnerFigures[]): void {
    this.runners.collectWith(collector);
  }
}

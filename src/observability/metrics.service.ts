import { Injectable } from '@nestjs/common';
import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import { LabelBudget } from './label-budget';
import { DeferredSeries, HistogramSeries } from './metrics-registry';
import { RunnerFigures, RunnerMetrics } from './runner-metrics';

const MAX_MODEL_LABELS = 500;
const MAX_TENANT_LABELS = 200;

export type SlotState = 'busy' | 'free' | 'held';
export type TokenKind = 'prompt' | 'completion';
/** Why usage records were lost: the buffer was full (oldest dropped) or their batch kept failing. */
export type UsageDropReason = 'buffer_full' | 'write_failed';
/** A fixed set, so a client can never grow the label's cardinality. */
/** Why the admin token check refused a request. */
export type AdminAuthFailureReason = 'missing' | 'invalid' | 'rate_limited' | 'disabled';
/** Why an API-key check refused a request. */
export type ClientAuthFailureReason = 'missing' | 'invalid' | 'revoked' | 'disabled' | 'expired' | 'malformed' | 'rate_limited' | 'tenant_has_keys';

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
@Injectable()
export class MetricsService {
  private readonly requests: Counter<'provider' | 'model' | 'endpoint' | 'status' | 'tenant'>;
  private readonly requestDuration: Histogram<'provider' | 'model'>;
  private readonly firstByte: Histogram<'provider' | 'model'>;
  private readonly queueDepth: Gauge<'provider'>;
  private readonly queueWaitSeconds: Histogram<'provider'>;
  private readonly workersConnected: Gauge<'provider'>;
  private readonly workerSlots: Gauge<'provider' | 'state'>;
  private readonly tokensTotal: Counter<'provider' | 'model' | 'tenant' | 'kind'>;
  private readonly requeues: Counter<'provider'>;
  private readonly cancellations: Counter<'reason'>;
  private readonly rejections: Counter<'code'>;
  private readonly workerAuthFailures: Counter<'reason'>;
  private readonly clientAuthFailures: Counter<'reason'>;
  private readonly adminAuthFailures: Counter<'reason'>;
  private readonly workerEjections: Counter<'provider'>;
  private readonly rateLimitedTotal: Counter<'tenant' | 'kind'>;
  private readonly heartbeatTimeouts: Counter<'provider'>;
  private readonly redisUp: Gauge;
  private readonly rateLimiterFallbacks: Counter;
  private readonly cacheResults: Counter<'provider' | 'model' | 'result'>;
  private readonly cacheTokensReused: Counter<'provider' | 'model'>;
  private readonly usageWritten: Counter;
  private readonly usageDropped: Counter<'reason'>;
  private readonly usageBuffered: Gauge;
  /** GPU memory and KV cache from runner documents, cache hit ratio per model (runner-metrics.ts). */
  private readonly runners: RunnerMetrics;
  /** Reads the usage recorder's buffer size at scrape time. */
  private usageBufferCollector: (() => number) | undefined;
  /** Fills the slot gauges at scrape time, so no request pays for walking the workers. */
  private slotCollector: (() => void) | undefined;
  /** Client-chosen label values are capped (see LabelBudget). */
  private readonly models = new LabelBudget(MAX_MODEL_LABELS);
  private readonly tenants = new LabelBudget(MAX_TENANT_LABELS);
  /** Per-request updates, applied when scraped (see DeferredSeries): requests, tokens, queue depth. */
  private readonly pendingRequests = new DeferredSeries<'provider' | 'model' | 'endpoint' | 'status' | 'tenant'>('add');
  private readonly pendingTokens = new DeferredSeries<'provider' | 'model' | 'tenant' | 'kind'>('add');
  private readonly pendingQueueDepth = new DeferredSeries<'provider'>('set');
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
    this.usageWritten = new Counter({
      name: `${PREFIX}usage_records_written_total`,
      help: 'Usage records written to the database.',
      registers,
    });
    this.usageDropped = new Counter({
      name: `${PREFIX}usage_records_dropped_total`,
      help: 'Usage records lost: buffer_full (the database fell behind, the oldest were dropped) or write_failed (their batch failed repeatedly).',
      labelNames: ['reason'],
      registers,
    });
    // Both series exist from the start, so an alert on their increase sees zeros, not gaps.
    for (const reason of ['buffer_full', 'write_failed'] as const) this.usageDropped.inc({ reason }, 0);
    this.usageBuffered = new Gauge({
      name: `${PREFIX}usage_records_buffered`,
      help: 'Usage records waiting in memory to be written.',
      registers,
      collect: () => {
        if (this.usageBufferCollector) this.usageBuffered.set(this.usageBufferCollector());
      },
    });
    this.workerAuthFailures = new Counter({
      name: `${PREFIX}worker_auth_failures_total`,
      help: 'Worker connections refused during the handshake, by reason.',
      labelNames: ['reason'],
      registers,
    });
    this.adminAuthFailures = new Counter({
      name: `${PREFIX}admin_auth_failures_total`,
      help: 'Admin API requests refused at the admin token check, by reason (missing, invalid, rate_limited, disabled).',
      labelNames: ['reason'],
      registers,
    });
    this.clientAuthFailures = new Counter({
      name: `${PREFIX}client_auth_failures_total`,
      help: 'Client requests refused by API-key authentication, by reason (missing, invalid, revoked, disabled, expired, malformed, rate_limited, tenant_has_keys).',
      labelNames: ['reason'],
      registers,
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

  usageRecordsWritten(count: number): void {
    if (count > 0) this.usageWritten.inc(count);
  }

  usageRecordsDropped(reason: UsageDropReason, count: number): void {
    if (count > 0) this.usageDropped.inc({ reason }, count);
  }

  /** Registers what reports the usage buffer's size whenever metrics are scraped. */
  collectUsageBufferWith(collector: () => number): void {
    this.usageBufferCollector = collector;
  }

  workerAuthFailure(reason: string): void {
    this.workerAuthFailures.inc({ reason });
  }

  /** A client request refused by API-key authentication (see ApiKeysService for the reasons). */
  clientAuthFailure(reason: ClientAuthFailureReason): void {
    this.clientAuthFailures.inc({ reason });
  }

  /** A request refused at the admin token check (see auth/admin-auth.ts). */
  adminAuthFailure(reason: AdminAuthFailureReason): void {
    this.adminAuthFailures.inc({ reason });
  }
}

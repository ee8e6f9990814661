import Redis, { RedisOptions } from 'ioredis';
import { Clock, systemClock, TimerHandle } from '../common/clock';
import type { GcraMode } from './gcra';
import { MemoryRateLimiter } from './memory-rate-limiter';
import { assertValidCall, RateBucket, RateDecision, RateLimiter, RateLimiterHealth } from './rate-limiter';
import { defineGcraCommand, runGcraScript } from './redis-script';
import { redisHostPort } from '../common/redis-url';

/** Where the limiter reports its Redis state (MetricsService implements it). */
export interface RateLimiterMetrics {
  setRedisUp(up: boolean): void;
  rateLimiterFallback(): void;
}

/** The two levels the limiter logs at (AppLogger and Nest's Logger fit). */
export interface RateLimiterLogger {
  log(message: string, context?: string): void;
  warn(message: string, context?: string): void;
}

export interface RedisRateLimiterOptions {
  /** redis:// or rediss:// URL (validated by loadConfig). */
  url: string;
  clock?: Clock;
  logger?: RateLimiterLogger;
  metrics?: RateLimiterMetrics;
  /** Prefix of every bucket key in Redis. */
  keyPrefix?: string;
  /** A command without a reply within this time fails (and the call is answered locally). */
  commandTimeoutMs?: number;
  /** A TCP/TLS connect attempt is abandoned after this time. */
  connectTimeoutMs?: number;
  /** Reconnect delays grow from 50 ms by doubling up to this, and retrying never stops. */
  maxReconnectDelayMs?: number;
  /** While connected but failing (timeouts, error replies), Redis is probed on this period. */
  probeIntervalMs?: number;
  /** The local limiter used while Redis is down (one is created when not given). */
  fallback?: MemoryRateLimiter;
  /** Extra ioredis options (tests); the fail-fast ones above win. */
  redisOptions?: RedisOptions;
}

export const DEFAULT_KEY_PREFIX = 'switchboard:rl:';
const CONTEXT = 'RateLimiter';

type Mode = 'ok' | 'down';

/**
 * GCRA buckets in Redis, shared by every gateway replica: one Lua script per decision (atomic,
 * Redis TIME as the clock), so a limit holds exactly across replicas.
 *
 * Redis never makes a call wait or fail: while the connection is not ready (refused, closed,
 * reconnecting) or after a command failed (timeout, error reply), decisions come at once from a
 * local in-memory limiter — the limit is then enforced per replica. The switch is logged once per
 * transition, shown as `down` in health, and counted in `switchboard_rate_limiter_fallbacks_total`.
 * ioredis reconnects forever (capped backoff); once connected, a probe (one real script run) must
 * succeed before decisions go back to Redis, and that recovery is logged.
 */
export class RedisRateLimiter extends RateLimiter {
  readonly synchronous = false;
  readonly client: Redis;
  readonly fallback: MemoryRateLimiter;
  private readonly clock: Clock;
  private readonly logger?: RateLimiterLogger;
  private readonly metrics?: RateLimiterMetrics;
  private readonly keyPrefix: string;
  private readonly probeIntervalMs: number;
  private readonly hostPort: string;
  private mode: Mode = 'down';
  /** Whether the current mode was reported (the first connection attempt is quiet until it settles). */
  private announced = false;
  private everUp = false;
  private since: number | undefined;
  private lastError: string | undefined;
  private probing = false;
  private probeTimer: TimerHandle | undefined;
  private closed = false;

  constructor(options: RedisRateLimiterOptions) {
    super();
    this.clock = options.clock ?? systemClock;
    this.logger = options.logger;
    this.metrics = options.metrics;
    this.keyPrefix = options.keyPrefix ?? DEFAULT_KEY_PREFIX;
    this.probeIntervalMs = options.probeIntervalMs ?? 1000;
    this.hostPort = redisHostPort(options.url);
    this.fallback = options.fallback ?? new MemoryRateLimiter(this.clock);
    const maxDelay = options.maxReconnectDelayMs ?? 2000;
    this.client = new Redis(options.url, {
      ...options.redisOptions,
      // Fail fast: nothing queues while disconnected, nothing is resent after a reconnect (a
      // resent consume could count twice), and a silent server cannot hold a call for long.
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      autoResendUnfulfilledCommands: false,
      commandTimeout: options.commandTimeoutMs ?? 500,
      connectTimeout: options.connectTimeoutMs ?? 1000,
      // How long disconnect() waits for a socket to close before destroying it (default 2 s).
      disconnectTimeout: 200,
      retryStrategy: (attempt) => Math.min(50 * 2 ** Math.min(attempt - 1, 16), maxDelay),
      lazyConnect: true,
      connectionName: options.redisOptions?.connectionName ?? 'switchboard-rate-limiter',
    });
    defineGcraCommand(this.client);
    this.client.on('ready', () => void this.probe());
    this.client.on('close', () => this.markDown(this.lastError ?? 'connection closed'));
    // Every failed reconnect emits 'error': remembered for the next transition line, not logged.
    this.client.on('error', (err: Error) => (this.lastError = describe(err)));
    this.metrics?.setRedisUp(false);
    this.start();
  }

  /**
   * Starts connecting without waiting (the constructor does; idempotent): until Redis answers,
   * decisions are local.
   */
  start(): void {
    if (this.client.status === 'wait') this.client.connect().catch(() => undefined);
  }

  tryConsume(bucket: RateBucket, cost: number, now?: number): Promise<RateDecision> {
    return this.run('consume', bucket, cost, now);
  }

  charge(bucket: RateBucket, cost: number, now?: number): Promise<RateDecision> {
    return this.run('charge', bucket, cost, now);
  }

  health(): RateLimiterHealth {
    return {
      status: this.mode,
      url: this.hostPort,
      ...(this.since !== undefined ? { since: new Date(this.since).toISOString() } : {}),
    };
  }

  /** True while decisions come from Redis. */
  get usingRedis(): boolean {
    return this.mode === 'ok' && !this.closed;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (this.probeTimer) this.clock.clearTimeout(this.probeTimer);
    this.probeTimer = undefined;
    await this.fallback.close();
    const status = this.client.status;
    if (status === 'end') return;
    if (status === 'reconnecting' || status === 'close' || status === 'wait') {
      // No socket: disconnect() only cancels the pending reconnect (ioredis emits no 'end' then).
      this.client.disconnect();
      return;
    }
    const ended = new Promise<void>((resolve) => {
      const timer = this.clock.setTimeout(resolve, 1000);
      this.client.once('end', () => {
        this.clock.clearTimeout(timer);
        resolve();
      });
    });
    if (this.client.status === 'ready') {
      // QUIT lets Redis finish what this connection sent; a silent server gets the command timeout.
      await this.client.quit().catch(() => this.client.disconnect());
    } else {
      this.client.disconnect();
    }
    await ended;
  }

  private run(mode: GcraMode, bucket: RateBucket, cost: number, now: number | undefined): Promise<RateDecision> {
    assertValidCall(bucket, cost);
    if (!this.usingRedis || this.client.status !== 'ready') return Promise.resolve(this.local(mode, bucket, cost, now));
    return runGcraScript(this.client, this.keyPrefix + bucket.key, mode, bucket, cost).then(
      (decision) => decision,
      (err: Error) => {
        this.markDown(describe(err));
        return this.local(mode, bucket, cost, now);
      },
    );
  }

  private local(mode: GcraMode, bucket: RateBucket, cost: number, now: number | undefined): RateDecision {
    this.metrics?.rateLimiterFallback();
    return mode === 'charge' ? this.fallback.charge(bucket, cost, now) : this.fallback.tryConsume(bucket, cost, now);
  }

  /** Decides whether Redis is usable by running the script once (it also writes, as real calls do). */
  private async probe(): Promise<void> {
    if (this.closed || this.probing || this.mode === 'ok') return;
    this.probing = true;
    try {
      await runGcraScript(this.client, `${this.keyPrefix}__probe__`, 'charge', { key: '__probe__', limit: 1, windowMs: 1 }, 1);
      this.markUp();
    } catch (err) {
      this.markDown(describe(err as Error));
    } finally {
      this.probing = false;
    }
  }

  private markUp(): void {
    if (this.closed || this.mode === 'ok') return;
    if (this.probeTimer) this.clock.clearTimeout(this.probeTimer);
    this.probeTimer = undefined;
    this.mode = 'ok';
    this.since = this.clock.now();
    this.announced = true;
    this.lastError = undefined;
    this.metrics?.setRedisUp(true);
    this.logger?.log(
      this.everUp
        ? `Redis at ${this.hostPort} answers again: rate limits are shared through Redis again`
        : `rate limits are shared through Redis at ${this.hostPort}`,
      CONTEXT,
    );
    this.everUp = true;
  }

  private markDown(reason: string): void {
    if (this.closed) return;
    // Connected but failing (a timeout, an error reply): no 'ready' will come, so probe.
    if (this.client.status === 'ready') this.scheduleProbe();
    if (this.mode === 'down' && this.announced) return;
    this.mode = 'down';
    this.since = this.clock.now();
    this.announced = true;
    this.metrics?.setRedisUp(false);
    this.logger?.warn(
      `Redis at ${this.hostPort} is unavailable (${reason}): rate limits are enforced by each replica in memory until it answers again`,
      CONTEXT,
    );
  }

  private scheduleProbe(): void {
    if (this.probeTimer || this.closed) return;
    this.probeTimer = this.clock.setTimeout(() => {
      this.probeTimer = undefined;
      // A failed probe schedules the next one (markDown); a lost connection waits for 'ready'.
      if (this.client.status === 'ready') void this.probe();
    }, this.probeIntervalMs);
  }
}

/** An error as one short line (never the URL: ioredis messages carry host:port only). */
function describe(err: Error): string {
  const code = (err as { code?: unknown }).code;
  return typeof code === 'string' && !err.message.includes(code) ? `${code}: ${err.message}` : err.message;
}

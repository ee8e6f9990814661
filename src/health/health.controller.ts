import { Controller, Get, Inject, Optional, Res, ServiceUnavailableException } from '@nestjs/common';
import type { FastifyReply } from 'fastify';
import { HealthCheck, HealthCheckResult, HealthCheckService, TypeOrmHealthIndicator } from '@nestjs/terminus';
import { appVersion } from '../observability/app-version';
import {
  EMPTY_HEALTH_SNAPSHOT,
  HEALTH_SNAPSHOT,
  HealthSnapshot,
  ProviderHealth,
  REDIS_HEALTH,
  RedisHealth,
  RedisHealthSource,
} from '../observability/health-snapshot';
import { LifecycleHealthIndicator } from './lifecycle.health';
import { LifecycleState } from '../observability/lifecycle-state';
import { ApiDoc } from '../common/api-doc';
import { OBSERVABILITY_API } from './health.schemas';
import { Membership } from '../cluster/membership.port';

const DATABASE_PING_TIMEOUT_MS = 1500;

export interface HealthSummary {
  /**
   * The seed's values (model-runner-api `GET /health`): `healthy`, or `saturated` when every enabled
   * pool's queue is at a non-zero bound (new requests get 429), or `shutting_down`.
   */
  status: 'healthy' | 'shutting_down' | 'saturated';
  version: string;
  uptime_secs: number;
  workers_connected: number;
  queue_depth: number;
  models_loaded: number;
  /** The seed's camelCase names, beside ours: same figures as uptime_secs, models_loaded, queue_depth. */
  uptime: number;
  modelsLoaded: number;
  queueDepth: number;
  providers: ProviderHealth[];
  /** The rate limiter's Redis; absent while REDIS_URL is not set (status `disabled`). */
  redis?: RedisHealth;
  /** Cluster mode only: who this replica is, how many replicas it sees, whether Redis is out of reach. */
  cluster?: { replica_id: string; members: number; degraded: boolean };
}

/**
 * A pool's queue is at its bound only when the bound admits waiting at all: `max_queue_len: 0`
 * (documented as valid: never queue, place or reject) makes `0 >= 0` true on an idle pool, and a
 * load balancer would take a healthy gateway out.
 */
export function queueAtBound(p: Pick<ProviderHealth, 'queue_depth' | 'max_queue_len'>): boolean {
  return p.max_queue_len > 0 && p.queue_depth >= p.max_queue_len;
}

@Controller('health')
export class HealthController {
  private readonly startedAt = Date.now();
  private readonly snapshot: HealthSnapshot;

  constructor(
    private readonly health: HealthCheckService,
    private readonly database: TypeOrmHealthIndicator,
    private readonly lifecycleIndicator: LifecycleHealthIndicator,
    private readonly lifecycle: LifecycleState,
    @Optional() @Inject(HEALTH_SNAPSHOT) snapshot?: HealthSnapshot,
    @Optional() @Inject(REDIS_HEALTH) private readonly redis?: RedisHealthSource,
    @Optional() private readonly membership?: Membership,
  ) {
    this.snapshot = snapshot ?? EMPTY_HEALTH_SNAPSHOT;
  }

  /** Liveness: answers while the event loop runs, also during a graceful drain. */
  @Get('live')
  @ApiDoc(OBSERVABILITY_API.live)
  live(): { status: 'ok' } {
    return { status: 'ok' };
  }

  /**
   * Readiness: the database answers and shutdown has not begun; 503 otherwise. The 503 is written
   * here rather than thrown, so a global exception filter (the inference dialect one) cannot turn
   * it into a 500 or an OpenAI error body.
   */
  @Get('ready')
  @ApiDoc(OBSERVABILITY_API.ready)
  // terminus's own OpenAPI responses would merge into ours (same statuses): documented by ApiDoc only.
  @HealthCheck({ noCache: true, swaggerDocumentation: false })
  async ready(@Res({ passthrough: true }) reply: FastifyReply): Promise<HealthCheckResult> {
    // Refused up front during shutdown: terminus would log every probe of the drain as an error.
    if (this.lifecycle.isUnready) {
      const lifecycle = this.lifecycleIndicator.acceptingTraffic('lifecycle');
      reply.status(503);
      return { status: 'shutting_down', info: {}, error: lifecycle, details: lifecycle };
    }
    try {
      return await this.health.check([
        () => this.database.pingCheck('database', { timeout: DATABASE_PING_TIMEOUT_MS }),
        () => this.lifecycleIndicator.acceptingTraffic('lifecycle'),
      ]);
    } catch (e) {
      if (!(e instanceof ServiceUnavailableException)) throw e;
      reply.status(503);
      return e.getResponse() as HealthCheckResult;
    }
  }

  /**
   * Operator summary: counts only, no secrets, no worker addresses. `redis` (host:port only)
   * appears when REDIS_URL is set; Redis being down never changes `status` or readiness: the
   * rate limiter keeps deciding locally. `cluster` appears in cluster mode; being degraded never
   * changes `status` either: the replica keeps serving the workers connected to it.
   */
  @Get()
  @ApiDoc(OBSERVABILITY_API.summary)
  summary(@Res({ passthrough: true }) reply: FastifyReply): HealthSummary {
    const redis = this.redis?.health();
    const providers = this.snapshot.providers();
    const enabled = providers.filter((p) => p.enabled);
    const saturated = enabled.length > 0 && enabled.every(queueAtBound);
    const status = this.lifecycle.isUnready ? 'shutting_down' : saturated ? 'saturated' : 'healthy';
    // Load balancers probing /health take the gateway out while it cannot admit anything new.
    if (status !== 'healthy') reply.status(503);
    const uptime = Math.floor((Date.now() - this.startedAt) / 1000);
    const queueDepth = this.snapshot.queueDepth();
    const modelsLoaded = this.snapshot.modelsLoaded();
    return {
      status,
      version: appVersion(),
      uptime_secs: uptime,
      workers_connected: this.snapshot.workersConnected(),
      queue_depth: queueDepth,
      models_loaded: modelsLoaded,
      uptime,
      modelsLoaded,
      queueDepth,
      providers: providers.map((p) => ({
        name: p.name,
        enabled: p.enabled,
        workers: p.workers,
        queue_depth: p.queue_depth,
        max_queue_len: p.max_queue_len,
      })),
      ...(redis && redis.status !== 'disabled' ? { redis: { status: redis.status, url: redis.url, ...(redis.since ? { since: redis.since } : {}) } } : {}),
      ...(this.membership?.enabled
        ? { cluster: { replica_id: this.membership.replicaId, members: this.membership.members().length, degraded: this.membership.degraded() } }
        : {}),
    };
  }
}

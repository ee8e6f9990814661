/** Typed configuration, built once at boot by `loadConfig` (see docs/configuration.md). */
import type { ModelCapabilities } from '../protocol';
import type { RoutingConfig } from './sections/routing';
import type { TenancyConfig } from './sections/tenancy';
import type { QueueConfig } from './sections/queue';
import type { UsageConfig } from './sections/usage';
import type { ApiKeysConfig } from './sections/api-keys';
import type { ArtifactsConfig } from './sections/artifacts';
import type { TasksConfig } from './sections/tasks';
import type { GovernanceConfig } from './sections/governance';
import type { LifecycleConfig } from './sections/lifecycle';
import type { ConnectionConfig } from './sections/connection';
import type { TelemetryConfig } from './sections/telemetry';
import type { OidcConfig } from './sections/auth';
import type { ClusterConfig } from './sections/cluster';

export interface ProviderConfig {
  name: string;
  /** Plain secret from env/YAML; hashed before it is stored. */
  secret?: string;
  /** Pre-hashed secret (`scrypt$…`), so YAML files need not hold plain secrets. */
  secretHash?: string;
  enabled: boolean;
  maxQueueLen: number;
  queueTimeoutMs: number;
  requestTimeoutMs: number;
  /** The pool's own first-byte watchdog timeout; unset = `routing.first_byte_timeout_secs`. */
  firstByteTimeoutMs?: number;
  maxModelsPerWorker: number;
  /** Models the operator declares for this provider even while no worker serves them. */
  models: string[];
  /** Routing priority of the provider's workers (lower is preferred); overrides what workers declare. */
  priority?: number;
  /** Per-model capabilities; each declared field overrides what the workers advertise. */
  capabilities: Record<string, ModelCapabilities>;
  /** GPU-time chargeback: price of one GPU-hour (any currency). */
  costPerGpuHour?: number;
  /** GPUs behind each worker of the pool (default 1). */
  gpusPerWorker?: number;
  /** `providers[].translation`: unset = `routing.translation`. */
  translation?: 'auto' | 'never';
}

/** Limits a provider gets when it does not set its own (env / top-level YAML values). */
export interface ProviderDefaults {
  maxQueueLen: number;
  queueTimeoutMs: number;
  requestTimeoutMs: number;
  maxModelsPerWorker: number;
}

export interface AuthLimiterConfig {
  maxFailures: number;
  windowMs: number;
  blockMs: number;
  trustedProxies: string[];
}

export interface AppConfig {
  listenHost: string;
  listenPort: number;
  providers: ProviderConfig[];
  providerDefaults: ProviderDefaults;
  defaultProviderName: string;
  heartbeatIntervalMs: number;
  heartbeatTimeoutMs: number;
  registerTimeoutMs: number;
  adminToken?: string;
  /** `ADMIN_AUTH_FAILURE_LIMIT`: wrong admin tokens per client address per minute before it is refused for a minute. */
  adminAuthFailureLimit: number;
  databaseUrl: string;
  /** Redis shared by the replicas' rate limiters (redis:// or rediss://): REDIS_URL, else CLUSTER_REDIS_URL; unset = in-memory limits. */
  redisUrl?: string;
  configFile?: string;
  logLevel: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';
  maxBodyBytes: number;
  maxStreamBytes: number;
  /** Client connection timeouts and cap, worker frame caps (connection-config.ts). */
  connections: ConnectionConfig;
  maxRequeues: number;
  cancelGraceMs: number;
  /** How long a stream may stay backpressured before it is ended as too slow. */
  slowClientTimeoutMs: number;
  /** Unread bytes one streaming client may have waiting before its request is cancelled (`client_too_slow`). */
  streamClientBufferBytes: number;
  /** Response bytes held across all requests (unread stream data, collected bodies) above which new work is refused (503). */
  maxBufferedBytes: number;
  rejectLegacyWorkers: boolean;
  /** `METRICS_PORT`: /metrics on a listener of its own (0 = any free port); undefined = on the client port. */
  metricsPort?: number;
  /** `ENABLE_METRICS`: false = no /metrics anywhere. */
  metricsEnabled: boolean;
  modelsRefreshIntervalMs: number;
  shutdownDrainTimeoutMs: number;
  /** After SIGTERM, unready but still serving for this long before the drain (a load balancer's detection time). */
  shutdownDelayMs: number;
  /** On a second SIGTERM/SIGINT, how long the write-behind queues get to be written before exit. */
  shutdownFlushTimeoutMs: number;
  authLimiter: AuthLimiterConfig;
  heartbeatFlushIntervalMs: number;
  staleSweepIntervalMs: number;
  workerRecordRetentionMs: number;
  /** Worker records seen within this window still make their models "known" (404 vs queue). */
  recentWorkerWindowMs: number;
  instanceId: string;
  routing: RoutingConfig;
  /** HTTPS (HTTP/2 with HTTP/1.1 fallback, workers' wss:// included) when both files are set. */
  tls?: { certFile: string; keyFile: string };
  /** Browser origins allowed to call the API (CORS); empty = CORS off. */
  corsOrigins: string[];
  tenancy: TenancyConfig;
  queue: QueueConfig;
  usage: UsageConfig;
  /** Client API keys: `REQUIRE_API_KEYS`, the config file's `keys:` (see docs/tenancy.md). */
  apiKeys: ApiKeysConfig;
  /** The artifact registry: size bounds, write-behind, retention (see docs/artifacts.md). */
  artifacts: ArtifactsConfig;
  /** The task API (`tasks:`): event buffers, retention, keepalive and position updates. */
  tasks: TasksConfig;
  /** Signers and key of governed lifecycle operations (`governance:`, `VERIFIED_OP_TOKEN_KEY_PATH`). */
  governance: GovernanceConfig;
  /** Model load, unload and cache flush timings (`lifecycle:`). */
  lifecycle: LifecycleConfig;
  /** OpenTelemetry traces (off unless an OTLP endpoint is set). */
  telemetry: TelemetryConfig;
  /** Cluster mode (`cluster:`): on when `cluster.redisUrl` is set (docs/cluster.md). */
  cluster: ClusterConfig;
  /** Single sign-on (`auth.oidc:`); absent = only ADMIN_TOKEN opens the admin API. */
  oidc?: OidcConfig;
}

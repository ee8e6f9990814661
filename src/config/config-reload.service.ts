import { Inject, Injectable, Logger } from '@nestjs/common';
import { isDeepStrictEqual } from 'node:util';
import { AppConfig } from './app-config';
import { APP_CONFIG } from './config-token';
import { configOrigin, ConfigError, loadConfig } from './load-config';
import type { Env } from '../common/config-reader';

/**
 * One module's part of a configuration reload (providers, routing, tenants). The module owns its
 * part: it reads it from the new configuration, compares it with its running state and swaps it in.
 */
export interface ReloadParticipant {
  /** Its key in the answer's `changes`. */
  readonly section: string;
  /** Parts commit in ascending order (all within one synchronous step). */
  readonly order: number;
  /**
   * Builds the new state — asynchronous work such as hashing secrets included — without changing
   * anything. Problems that make the new configuration unusable go to `problems`.
   */
  prepare(next: AppConfig, problems: string[]): PreparedChange | Promise<PreparedChange>;
}

export interface PreparedChange {
  /** Checked again right before the swap (synchronously), against changes made meanwhile (admin API). */
  check?(problems: string[]): void;
  /** Swaps the new state in. Synchronous and infallible; returns what changed. */
  commit(): object;
  /** After every part committed: writes behind (database), best effort. */
  persist?(): Promise<void>;
  /** Tolerated oddities of the new configuration (logged, and listed in the answer). */
  warnings?: string[];
}

export interface ReloadResult {
  reloaded: true;
  config_file: string | null;
  changes: Record<string, object>;
  /** Settings changed in the file that need a restart: not applied. */
  restart_required: string[];
  warnings: string[];
}

/** The new configuration was refused as a whole; nothing changed. */
export class ReloadRejected extends Error {
  constructor(readonly problems: string[]) {
    super(`configuration reload refused (${problems.length} problem${problems.length === 1 ? '' : 's'}): ${problems.join('; ')}`);
    this.name = 'ReloadRejected';
  }
}

/**
 * Where each setting outside providers, routing and tenants is named in the answer's
 * `restart_required`. `null`: reloadable (each module takes its part) or not a file setting. The
 * type lists every AppConfig field, so a new setting must be classified here.
 */
type SettingNames = string | null | { [field: string]: SettingNames };

const RESTART_ONLY: { [K in keyof AppConfig]-?: SettingNames } = {
  listenHost: 'listen_addr',
  listenPort: 'listen_addr',
  providers: null,
  providerDefaults: null,
  defaultProviderName: 'provider_name',
  heartbeatIntervalMs: 'heartbeat_interval_secs',
  heartbeatTimeoutMs: 'heartbeat_timeout_secs',
  registerTimeoutMs: 'register_timeout_secs',
  adminToken: null, // environment only
  adminAuthFailureLimit: 'admin_auth_failure_limit',
  databaseUrl: 'database_url',
  redisUrl: 'redis_url',
  configFile: null, // environment only
  logLevel: 'log_level',
  maxBodyBytes: 'max_body_bytes',
  maxStreamBytes: 'max_stream_bytes',
  connections: {
    requestTimeoutMs: 'http_request_timeout_secs',
    headersTimeoutMs: 'http_headers_timeout_secs',
    keepAliveTimeoutMs: 'http_keep_alive_timeout_secs',
    maxClientConnections: 'max_client_connections',
    workerRegisterFrameBytes: 'worker_register_frame_bytes',
    maxWorkerFrameBytes: 'max_worker_frame_bytes',
  },
  maxRequeues: 'max_requeues',
  cancelGraceMs: 'cancel_grace_secs',
  slowClientTimeoutMs: 'slow_client_timeout_secs',
  streamClientBufferBytes: 'stream_client_buffer_bytes',
  maxBufferedBytes: 'max_buffered_bytes',
  rejectLegacyWorkers: 'reject_legacy_workers',
  modelsRefreshIntervalMs: 'models_refresh_interval_secs',
  shutdownDrainTimeoutMs: 'shutdown_drain_timeout_secs',
  shutdownFlushTimeoutMs: 'shutdown_flush_timeout_secs',
  authLimiter: { maxFailures: 'auth_failure_limit', windowMs: 'auth_failure_window_secs', blockMs: 'auth_block_secs', trustedProxies: 'trusted_proxies' },
  heartbeatFlushIntervalMs: 'heartbeat_flush_interval_secs',
  staleSweepIntervalMs: 'stale_sweep_interval_secs',
  workerRecordRetentionMs: 'worker_record_retention_secs',
  recentWorkerWindowMs: 'recent_worker_window_secs',
  instanceId: 'instance_id',
  routing: null,
  corsOrigins: 'cors_origins',
  tls: { certFile: 'tls_cert_file', keyFile: 'tls_key_file' },
  tenancy: null,
  queue: { agingMs: 'queue.aging_secs' },
  usage: { retentionMs: 'usage.retention_days', flushIntervalMs: 'usage.flush_interval_secs', batchSize: 'usage.batch_size', bufferSize: 'usage.buffer_size' },
  apiKeys: {
    requireApiKeys: 'require_api_keys',
    keys: 'keys',
    lastUsedFlushIntervalMs: 'api_key_last_used_flush_secs',
    authLimiter: { maxFailures: 'client_auth_failure_limit', windowMs: 'client_auth_failure_window_secs', blockMs: 'client_auth_block_secs' },
  },
  artifacts: {
    maxBytes: 'artifacts.max_bytes',
    inlineTranscriptBytes: 'artifacts.inline_transcript_bytes',
    maxTranscriptBytes: 'artifacts.max_transcript_bytes',
    retentionMs: 'artifacts.retention_days',
    flushIntervalMs: 'artifacts.flush_interval_secs',
    bufferBytes: 'artifacts.buffer_bytes',
    maxBytesPerTenant: 'artifacts.max_bytes_per_tenant',
  },
  tasks: {
    maxEvents: 'tasks.max_events',
    maxBytes: 'tasks.max_bytes',
    retentionMs: 'tasks.retention_secs',
    keepaliveMs: 'tasks.keepalive_secs',
    positionIntervalMs: 'tasks.position_interval_secs',
    metricsIntervalMs: 'tasks.metrics_interval_secs',
    sessionTtlMs: 'tasks.session_ttl_secs',
  },
  governance: {
    keyPath: 'governance.key_path',
    signers: 'governance.signers',
    signerKeys: 'governance.signers',
    signersFile: 'governance.signers',
    sharedKeyCompat: 'governance.shared_key_compat',
    requiredSigners: 'governance.required_signers',
    auditRetentionMs: 'governance.audit_retention_days',
    unauthenticatedAuditRetentionMs: 'governance.unauthenticated_audit_retention_days',
  },
  lifecycle: {
    unloadDrainTimeoutMs: 'lifecycle.unload_drain_timeout_secs',
    operationTimeoutMs: 'lifecycle.operation_timeout_secs',
    loadTimeoutMs: 'lifecycle.load_timeout_secs',
    taskRetentionMs: 'lifecycle.task_retention_hours',
    settleTimeoutMs: 'lifecycle.settle_timeout_secs',
  },
};

/**
 * `POST /admin/reload` and SIGHUP: re-reads CONFIG_FILE with `loadConfig` (the environment of the
 * boot still wins over the file) and hands each module its part. Everything is validated and
 * prepared first (secrets hashed, new routing and tenants built); then every part is swapped in
 * within one synchronous step, so a request sees either the old configuration or the new one.
 * An invalid file changes nothing. Settings that need a restart are reported, not applied.
 */
@Injectable()
export class ConfigReloadService {
  private readonly log = new Logger('ConfigReload');
  private readonly participants: ReloadParticipant[] = [];
  private readonly env: Env;
  private readonly instanceIdGenerated: boolean;
  /** Reloads (configuration and pools) run one at a time. */
  private tail: Promise<unknown> = Promise.resolve();

  constructor(@Inject(APP_CONFIG) private readonly boot: AppConfig) {
    const origin = configOrigin(boot);
    this.env = origin?.env ?? { ...process.env };
    this.instanceIdGenerated = origin?.instanceIdGenerated ?? false;
  }

  /** Called by each module that owns a reloadable part, when it is constructed. */
  register(participant: ReloadParticipant): void {
    this.participants.push(participant);
    this.participants.sort((a, b) => a.order - b.order);
  }

  /** Runs `task` once every reload (or pool reload) queued before it has finished; later ones wait for it. */
  exclusive<T>(task: () => Promise<T>): Promise<T> {
    const run = this.tail.then(task, task);
    this.tail = run.catch(() => undefined);
    return run;
  }

  /** Re-reads the configuration and applies it all or nothing; throws ReloadRejected naming every problem. */
  reload(trigger: string): Promise<ReloadResult> {
    return this.exclusive(async () => {
      try {
        const result = await this.apply();
        this.log.log({
          msg: `configuration reloaded (${trigger})${result.restart_required.length ? `; needs a restart to apply: ${result.restart_required.join(', ')}` : ''}`,
          changes: result.changes,
          restart_required: result.restart_required,
        });
        for (const w of result.warnings) this.log.warn(w);
        return result;
      } catch (e) {
        if (e instanceof ReloadRejected) {
          this.log.error({ msg: `${e.message} (${trigger}); the running configuration stays`, problems: e.problems });
        }
        throw e;
      }
    });
  }

  private async apply(): Promise<ReloadResult> {
    const restartRequired: string[] = [];
    let next = this.read(this.env);
    if (next.defaultProviderName !== this.boot.defaultProviderName) {
      // Workers without ?provider= keep joining the boot's default provider: build the provider set as before.
      restartRequired.push('provider_name');
      next = this.read({ ...this.env, PROVIDER_NAME: this.boot.defaultProviderName });
    }
    for (const key of this.restartOnlyChanges(next)) if (!restartRequired.includes(key)) restartRequired.push(key);

    const problems: string[] = [];
    const prepared: Array<{ participant: ReloadParticipant; change: PreparedChange }> = [];
    for (const participant of this.participants) {
      prepared.push({ participant, change: await participant.prepare(next, problems) });
    }
    if (problems.length === 0) for (const { change } of prepared) change.check?.(problems);
    if (problems.length > 0) throw new ReloadRejected(problems);

    // The swap: no await from here to the end of the loop.
    const changes: ReloadResult['changes'] = {};
    for (const { participant, change } of prepared) changes[participant.section] = change.commit();

    for (const { participant, change } of prepared) {
      await change.persist?.().catch((e: unknown) => this.log.warn(`${participant.section}: writing the reloaded configuration to the database failed: ${(e as Error).message}`));
    }
    return {
      reloaded: true,
      config_file: next.configFile ?? null,
      changes,
      restart_required: restartRequired,
      warnings: prepared.flatMap(({ change }) => change.warnings ?? []),
    };
  }

  private read(env: Env): AppConfig {
    try {
      return loadConfig(env);
    } catch (e) {
      if (e instanceof ConfigError) throw new ReloadRejected(e.problems);
      throw e;
    }
  }

  /** Names of the settings that differ from the boot's but take a restart to change. */
  private restartOnlyChanges(next: AppConfig): string[] {
    const out = new Set<string>();
    const compare = (names: SettingNames, before: unknown, after: unknown) => {
      if (names === null) return;
      if (typeof names === 'string') {
        if (!isDeepStrictEqual(before, after)) out.add(names);
        return;
      }
      for (const [field, sub] of Object.entries(names)) {
        compare(sub, (before as Record<string, unknown> | undefined)?.[field], (after as Record<string, unknown> | undefined)?.[field]);
      }
    };
    const { instanceId, maxRequeues, ...rest } = RESTART_ONLY;
    compare(rest, this.boot, next);
    // A random default (no INSTANCE_ID anywhere) is not a setting: two of them are not a change.
    if (!(this.instanceIdGenerated && (configOrigin(next)?.instanceIdGenerated ?? false))) compare(instanceId, this.boot.instanceId, next.instanceId);
    // `routing.max_retries` is the same setting as MAX_REQUEUES, and wins.
    if (next.maxRequeues !== this.boot.maxRequeues) out.add(next.routing.maxRetries !== this.boot.routing.maxRetries ? 'routing.max_retries' : (maxRequeues as string));
    return [...out];
  }
}

import { loadConfig } from './load-config';
import { fieldAt, restartKeys } from './restart-settings';
import { Setting, yamlPath } from './setting';
import { SETTING_GROUPS } from './settings';

/** AppConfig fields a default configuration leaves unset. */
const OPTIONAL = [
  'adminToken',
  'redisUrl',
  'configFile',
  'tls.certFile',
  'tls.keyFile',
  'routing.maxRetries',
  'governance.signersFile',
  'governance.keyPath',
  'telemetry.tracesEndpoint',
  // Single sign-on is off by default: the whole `oidc` section is absent.
  ...['issuer', 'clientId', 'clientSecret', 'redirectUrl', 'rolesClaim', 'roles', 'audience', 'sessionTtlMs'].map((f) => `oidc.${f}`),
  'metricsPort',
  // Cluster mode is off by default: no Redis, the listener decides the address, no secret needed.
  ...['redisUrl', 'advertiseUrl', 'secret', 'listenAddr'].map((f) => `cluster.${f}`),
];

const declared = SETTING_GROUPS.flatMap((g) =>
  Object.values<Setting>(g.settings).map((s) => ({ g, s, fields: s.fields.map((f) => (g.root ? `${g.root}.${f}` : f)) })),
);

function leaves(value: unknown, prefix: string): string[] {
  if (value === null || typeof value !== 'object' || Array.isArray(value) || value instanceof Map) return [prefix];
  return Object.entries(value).flatMap(([k, v]) => leaves(v, prefix ? `${prefix}.${k}` : k));
}

describe('configuration declarations', () => {
  it('declare every AppConfig field (a new setting must be declared, with its reload class)', () => {
    const fields = declared.flatMap((d) => d.fields);
    const covered = (p: string) => fields.some((f) => f === p || f.startsWith(`${p}.`) || p.startsWith(`${f}.`));
    expect(leaves(loadConfig({}), '').filter((p) => !covered(p))).toEqual([]);
  });

  it('name only fields AppConfig has', () => {
    const config = loadConfig({});
    const missing = declared.flatMap((d) => d.fields).filter((f) => fieldAt(config, f) === undefined && !OPTIONAL.includes(f));
    expect(missing).toEqual([]);
  });

  it('name each environment variable and YAML key once', () => {
    const envs = declared.flatMap((d) => [d.s.env, ...(d.s.aliases ?? [])]).filter(Boolean);
    const paths = declared.map((d) => yamlPath(d.g, d.s)).filter(Boolean);
    expect(envs.filter((e, i) => envs.indexOf(e) !== i)).toEqual([]);
    expect(paths.filter((p, i) => paths.indexOf(p) !== i)).toEqual([]);
  });

  it('derive the settings a reload reports as needing a restart', () => {
    expect(
      restartKeys()
        .map((k) => k.name)
        .sort(),
    ).toEqual(
      [
        'listen_addr',
        'provider_name',
        'heartbeat_interval_secs',
        'heartbeat_timeout_secs',
        'admin_auth_failure_limit',
        'database_url',
        'redis_url',
        'log_level',
        'max_body_bytes',
        'max_stream_bytes',
        'max_requeues',
        'tls_cert_file',
        'tls_key_file',
        'cors_origins',
        'cancel_grace_secs',
        'slow_client_timeout_secs',
        'stream_client_buffer_bytes',
        'max_buffered_bytes',
        'metrics_port',
        'enable_metrics',
        'register_timeout_secs',
        'reject_legacy_workers',
        'models_refresh_interval_secs',
        'shutdown_delay_secs',
        'shutdown_drain_timeout_secs',
        'shutdown_flush_timeout_secs',
        'auth_failure_limit',
        'auth_failure_window_secs',
        'auth_block_secs',
        'trusted_proxies',
        'http_request_timeout_secs',
        'http_headers_timeout_secs',
        'http_keep_alive_timeout_secs',
        'max_client_connections',
        'worker_register_frame_bytes',
        'max_worker_frame_bytes',
        'require_api_keys',
        'keys',
        'api_key_last_used_flush_secs',
        'client_auth_failure_limit',
        'client_auth_failure_window_secs',
        'client_auth_block_secs',
        'routing.first_byte_timeout_secs',
        'routing.first_byte_timeout_secs_per_pool',
        'routing.max_retries',
        'routing.stream_idle_timeout_secs',
        'queue.aging_secs',
        'usage.retention_days',
        'usage.flush_interval_secs',
        'usage.batch_size',
        'usage.buffer_size',
        'artifacts.max_bytes',
        'artifacts.inline_transcript_bytes',
        'artifacts.max_transcript_bytes',
        'artifacts.retention_days',
        ...['audience', 'client_id', 'client_secret_file', 'issuer', 'redirect_url', 'roles', 'roles_claim', 'session_ttl_secs'].map((k) => `auth.oidc.${k}`),
        'artifacts.flush_interval_secs',
        'artifacts.buffer_bytes',
        'artifacts.max_bytes_per_tenant',
        'tasks.max_events',
        'tasks.max_bytes',
        'tasks.retention_secs',
        'tasks.max_retained_bytes',
        'tasks.max_readers',
        'tasks.keepalive_secs',
        'tasks.position_interval_secs',
        'tasks.metrics_interval_secs',
        'tasks.session_ttl_secs',
        'telemetry.capture_content',
        'tasks.queue_timeout_secs',
        'tasks.max_run_secs',
        'governance.key_path',
        'governance.signers',
        'governance.required_signers',
        'governance.shared_key_compat',
        'governance.audit_retention_days',
        'governance.unauthenticated_audit_retention_days',
        'lifecycle.unload_drain_timeout_secs',
        'lifecycle.operation_timeout_secs',
        'lifecycle.load_timeout_secs',
        'lifecycle.task_retention_hours',
        'lifecycle.settle_timeout_secs',
        'heartbeat_flush_interval_secs',
        'stale_sweep_interval_secs',
        'worker_record_retention_secs',
        'recent_worker_window_secs',
        'instance_id',
        ...['redis_url', 'replica_id', 'advertise_url', 'listen_addr', 'replica_timeout_secs', 'redis_timeout_ms'].map((k) => `cluster.${k}`),
      ].sort(),
    );
  });
});

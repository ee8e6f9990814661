import { Env, Reader, TIMER } from '../../common/config-reader';

/** The `lifecycle:` section: how long model load, unload and cache flush may take (docs/lifecycle.md). */
export interface LifecycleConfig {
  /** An unload waits this long for the model's in-flight requests on the worker; then it fails (nothing is cut). */
  unloadDrainTimeoutMs: number;
  /** How long an unload or a cache flush waits for the worker's answer once sent. */
  operationTimeoutMs: number;
  /** A load the worker has not finished after this long fails (`timeout`); at most 24 h. */
  loadTimeoutMs: number;
  /** Finished load tasks are kept (and answer `GET /v1/models/load/:taskId`) at least this long. */
  taskRetentionMs: number;
  /**
   * At most this long, a model an unload (or eviction) held out of routing on a worker stays held
   * after the operation ended while the worker's model list may be stale (see settling-holds.ts).
   */
  settleTimeoutMs: number;
}

const KEYS = ['unload_drain_timeout_secs', 'operation_timeout_secs', 'load_timeout_secs', 'task_retention_hours', 'settle_timeout_secs'];
const HOUR_MS = 3600_000;

export function readLifecycleConfig(env: Env, section: unknown, problems: string[]): LifecycleConfig {
  const yaml = section && typeof section === 'object' && !Array.isArray(section) ? (section as Record<string, unknown>) : {};
  if (section !== undefined && section !== null && yaml !== section) problems.push('lifecycle (config file) must be a mapping');
  const r = new Reader(env, yaml, 'lifecycle', KEYS);
  const config: LifecycleConfig = {
    unloadDrainTimeoutMs: r.seconds('LIFECYCLE_UNLOAD_DRAIN_TIMEOUT_SECS', 'unload_drain_timeout_secs', 60, TIMER),
    operationTimeoutMs: r.seconds('LIFECYCLE_OPERATION_TIMEOUT_SECS', 'operation_timeout_secs', 120, TIMER),
    // At most a day, so a load never outlives the retention of its task.
    loadTimeoutMs: r.seconds('LIFECYCLE_LOAD_TIMEOUT_SECS', 'load_timeout_secs', 3600, { above: 0, max: 24 * 3600 }),
    // At least a day: `GET /v1/models/load/:taskId` answers for 24 h whatever is configured.
    taskRetentionMs: Math.round(r.number('LIFECYCLE_TASK_RETENTION_HOURS', 'task_retention_hours', 24, { min: 24, max: 24 * 3650 }) * HOUR_MS),
    settleTimeoutMs: r.seconds('LIFECYCLE_SETTLE_TIMEOUT_SECS', 'settle_timeout_secs', 600, TIMER),
  };
  for (const key of r.unknownKeys()) problems.push(`lifecycle.${key} (config file) is not a lifecycle setting (known: ${KEYS.join(', ')})`);
  problems.push(...r.problems);
  return config;
}

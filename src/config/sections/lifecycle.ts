import { Env, Reader, TIMER } from '../../common/config-reader';
import { group, num, read, secs, yamlKeys } from '../setting';

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

const HOUR_MS = 3600_000;

export const LIFECYCLE_SETTINGS = group('lifecycle', 'lifecycle', {
  unloadDrainTimeout: secs({
    env: 'LIFECYCLE_UNLOAD_DRAIN_TIMEOUT_SECS',
    yaml: 'unload_drain_timeout_secs',
    default: 60,
    opts: TIMER,
    reload: 'restart',
    fields: ['unloadDrainTimeoutMs'],
    doc: "an unload waits this long for the model's in-flight requests on a worker, then fails there (no request is cut)",
  }),
  operationTimeout: secs({
    env: 'LIFECYCLE_OPERATION_TIMEOUT_SECS',
    yaml: 'operation_timeout_secs',
    default: 120,
    opts: TIMER,
    reload: 'restart',
    fields: ['operationTimeoutMs'],
    doc: "how long an unload or a cache flush waits for the worker's answer",
  }),
  loadTimeout: secs({
    env: 'LIFECYCLE_LOAD_TIMEOUT_SECS',
    yaml: 'load_timeout_secs',
    default: 3600,
    opts: { above: 0, max: 24 * 3600 },
    reload: 'restart',
    fields: ['loadTimeoutMs'],
    doc: 'a model load not finished by then fails (at most 86400)',
  }),
  taskRetentionHours: num({
    env: 'LIFECYCLE_TASK_RETENTION_HOURS',
    yaml: 'task_retention_hours',
    default: 24,
    opts: { min: 24, max: 24 * 3650 },
    reload: 'restart',
    fields: ['taskRetentionMs'],
    doc: 'load tasks are kept this long after their last change (at least 24)',
  }),
  settleTimeout: secs({
    env: 'LIFECYCLE_SETTLE_TIMEOUT_SECS',
    yaml: 'settle_timeout_secs',
    default: 600,
    opts: TIMER,
    reload: 'restart',
    fields: ['settleTimeoutMs'],
    doc: "at most this long, a model stays out of routing on a worker after an unload there timed out (or completed while the worker still lists it), waiting for the worker's word ([lifecycle.md](lifecycle.md#unload-post-v1modelsunload))",
  }),
});
const S = LIFECYCLE_SETTINGS.settings;
const KEYS = yamlKeys(LIFECYCLE_SETTINGS);

export function readLifecycleConfig(env: Env, section: unknown, problems: string[]): LifecycleConfig {
  const yaml = section && typeof section === 'object' && !Array.isArray(section) ? (section as Record<string, unknown>) : {};
  if (section !== undefined && section !== null && yaml !== section) problems.push('lifecycle (config file) must be a mapping');
  const r = new Reader(env, yaml, 'lifecycle', KEYS);
  const config: LifecycleConfig = {
    unloadDrainTimeoutMs: read(r, env, S.unloadDrainTimeout),
    operationTimeoutMs: read(r, env, S.operationTimeout),
    // At most a day, so a load never outlives the retention of its task.
    loadTimeoutMs: read(r, env, S.loadTimeout),
    // At least a day: `GET /v1/models/load/:taskId` answers for 24 h whatever is configured.
    taskRetentionMs: Math.round(read(r, env, S.taskRetentionHours) * HOUR_MS),
    settleTimeoutMs: read(r, env, S.settleTimeout),
  };
  for (const key of r.unknownKeys()) problems.push(`lifecycle.${key} (config file) is not a lifecycle setting (known: ${KEYS.join(', ')})`);
  problems.push(...r.problems);
  return config;
}

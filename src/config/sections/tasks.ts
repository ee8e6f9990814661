import { Env, Reader, TIMER } from '../../common/config-reader';

/** The `tasks:` section of the config file: the task API's buffers and timings (see docs/tasks.md). */
export interface TasksConfig {
  /** Events one task keeps for its readers; past it the task ends with an error. */
  maxEvents: number;
  /** Bytes of SSE text one task keeps (its transcript); past it the task ends with an error. */
  maxBytes: number;
  /** How long a finished task (its status, events and transcript) stays readable. */
  retentionMs: number;
  /** What finished tasks may hold in memory together; past it the oldest are forgotten before their retention ends. */
  maxRetainedBytes: number;
  /** Streams one unfinished task may have open at once (each costs a write per worker chunk). */
  maxReaders: number;
  /** A `: keepalive` comment goes to every stream of a queued task this often. */
  keepaliveMs: number;
  /** How often queue positions and predicted starts are recomputed (and `started` repeated on change). */
  positionIntervalMs: number;
  /** The least time between two `metrics` events of a task. */
  metricsIntervalMs: number;
  /** A session's budget state is forgotten after this long without a task. */
  sessionTtlMs: number;
  /** Longest a task waits in the queue (instead of its pool's `queue_timeout_secs`). */
  queueTimeoutMs: number;
  /** Longest a task runs, from a worker first taking it to its end (instead of its pool's `request_timeout_secs`). */
  maxRunMs: number;
}

const KEYS = ['max_events', 'max_bytes', 'retention_secs', 'max_retained_bytes', 'max_readers', 'keepalive_secs', 'position_interval_secs', 'metrics_interval_secs', 'session_ttl_secs', 'queue_timeout_secs', 'max_run_secs'];

export function readTasksConfig(env: Env, section: unknown, problems: string[]): TasksConfig {
  const yaml = section && typeof section === 'object' && !Array.isArray(section) ? (section as Record<string, unknown>) : {};
  if (section !== undefined && section !== null && yaml !== section) problems.push('tasks (config file) must be a mapping');
  const r = new Reader(env, yaml, 'tasks', KEYS);
  const config: TasksConfig = {
    maxEvents: r.number('TASKS_MAX_EVENTS', 'max_events', 50_000, { min: 16, integer: true }),
    maxBytes: r.number('TASKS_MAX_BYTES', 'max_bytes', 2 * 1024 * 1024, { min: 4096, integer: true }),
    retentionMs: r.seconds('TASKS_RETENTION_SECS', 'retention_secs', 3600, TIMER),
    maxRetainedBytes: r.number('TASKS_MAX_RETAINED_BYTES', 'max_retained_bytes', 256 * 1024 * 1024, { min: 1024 * 1024, integer: true }),
    maxReaders: r.number('TASKS_MAX_READERS', 'max_readers', 16, { min: 1, integer: true }),
    keepaliveMs: r.seconds('TASKS_KEEPALIVE_SECS', 'keepalive_secs', 15, TIMER),
    positionIntervalMs: r.seconds('TASKS_POSITION_INTERVAL_SECS', 'position_interval_secs', 1, TIMER),
    metricsIntervalMs: r.seconds('TASKS_METRICS_INTERVAL_SECS', 'metrics_interval_secs', 5, TIMER),
    sessionTtlMs: r.seconds('TASKS_SESSION_TTL_SECS', 'session_ttl_secs', 24 * 3600, TIMER),
    queueTimeoutMs: r.seconds('TASKS_QUEUE_TIMEOUT_SECS', 'queue_timeout_secs', 3600, TIMER),
    maxRunMs: r.seconds('TASKS_MAX_RUN_SECS', 'max_run_secs', 3600, TIMER),
  };
  for (const key of r.unknownKeys()) problems.push(`tasks.${key} (config file) is not a tasks setting (known: ${KEYS.join(', ')})`);
  problems.push(...r.problems);
  return config;
}

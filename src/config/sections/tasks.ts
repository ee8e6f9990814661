import { Env, Reader, TIMER } from '../../common/config-reader';
import { group, num, read, secs, yamlKeys } from '../setting';

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

export const TASKS_SETTINGS = group('tasks', 'tasks', {
  maxEvents: num({
    env: 'TASKS_MAX_EVENTS',
    yaml: 'max_events',
    default: 50_000,
    opts: { min: 16, integer: true },
    reload: 'restart',
    fields: ['maxEvents'],
    doc: 'events one [task](tasks.md) keeps for its readers (at least 16); past it the task ends with `error` `stream_too_large`',
  }),
  maxBytes: num({
    env: 'TASKS_MAX_BYTES',
    yaml: 'max_bytes',
    default: 2 * 1024 * 1024,
    opts: { min: 4096, integer: true },
    reload: 'restart',
    fields: ['maxBytes'],
    doc: 'bytes of SSE text one task keeps (at least 4096); same',
  }),
  retention: secs({
    env: 'TASKS_RETENTION_SECS',
    yaml: 'retention_secs',
    default: 3600,
    opts: TIMER,
    reload: 'restart',
    fields: ['retentionMs'],
    doc: 'a finished task (status, events) stays readable this long',
  }),
  maxRetainedBytes: num({
    env: 'TASKS_MAX_RETAINED_BYTES',
    yaml: 'max_retained_bytes',
    default: 256 * 1024 * 1024,
    opts: { min: 1024 * 1024, integer: true },
    reload: 'restart',
    fields: ['maxRetainedBytes'],
    doc: 'what finished tasks may hold in memory together (events, request without the prompt, 1 KiB each); past it the oldest are forgotten before their retention ends (at least 1 MiB)',
  }),
  maxReaders: num({
    env: 'TASKS_MAX_READERS',
    yaml: 'max_readers',
    default: 16,
    opts: { min: 1, integer: true },
    reload: 'restart',
    fields: ['maxReaders'],
    doc: 'streams an unfinished [task](tasks.md) may have open at once; past it `GET /v1/tasks/:id/stream` answers `409 conflict`',
  }),
  keepalive: secs({
    env: 'TASKS_KEEPALIVE_SECS',
    yaml: 'keepalive_secs',
    default: 15,
    opts: TIMER,
    reload: 'restart',
    fields: ['keepaliveMs'],
    doc: '`: keepalive` comment period on the streams of a queued task',
  }),
  positionInterval: secs({
    env: 'TASKS_POSITION_INTERVAL_SECS',
    yaml: 'position_interval_secs',
    default: 1,
    opts: TIMER,
    reload: 'restart',
    fields: ['positionIntervalMs'],
    doc: 'queue positions and predicted starts are recomputed (and `started` repeated on change, session time budgets checked) this often',
  }),
  metricsInterval: secs({
    env: 'TASKS_METRICS_INTERVAL_SECS',
    yaml: 'metrics_interval_secs',
    default: 5,
    opts: TIMER,
    reload: 'restart',
    fields: ['metricsIntervalMs'],
    doc: 'the least time between two `metrics` events of a task',
  }),
  sessionTtl: secs({
    env: 'TASKS_SESSION_TTL_SECS',
    yaml: 'session_ttl_secs',
    default: 24 * 3600,
    opts: TIMER,
    reload: 'restart',
    fields: ['sessionTtlMs'],
    doc: "a task session's budget state is forgotten after this long without a task",
  }),
  queueTimeout: secs({
    env: 'TASKS_QUEUE_TIMEOUT_SECS',
    yaml: 'queue_timeout_secs',
    default: 3600,
    opts: TIMER,
    reload: 'restart',
    fields: ['queueTimeoutMs'],
    doc: "longest a [task](tasks.md) waits in the queue (`error` `queue_timeout`); tasks do not use the pool's `queue_timeout_secs`",
  }),
  maxRun: secs({
    env: 'TASKS_MAX_RUN_SECS',
    yaml: 'max_run_secs',
    default: 3600,
    opts: TIMER,
    reload: 'restart',
    fields: ['maxRunMs'],
    doc: "longest a task runs, from a worker first taking it to its end (`error` `request_timeout`, the worker gets `cancel`); tasks do not use the pool's `request_timeout_secs`",
  }),
});
const S = TASKS_SETTINGS.settings;
const KEYS = yamlKeys(TASKS_SETTINGS);

export function readTasksConfig(env: Env, section: unknown, problems: string[]): TasksConfig {
  const yaml = section && typeof section === 'object' && !Array.isArray(section) ? (section as Record<string, unknown>) : {};
  if (section !== undefined && section !== null && yaml !== section) problems.push('tasks (config file) must be a mapping');
  const r = new Reader(env, yaml, 'tasks', KEYS);
  const config: TasksConfig = {
    maxEvents: read(r, env, S.maxEvents),
    maxBytes: read(r, env, S.maxBytes),
    retentionMs: read(r, env, S.retention),
    maxRetainedBytes: read(r, env, S.maxRetainedBytes),
    maxReaders: read(r, env, S.maxReaders),
    keepaliveMs: read(r, env, S.keepalive),
    positionIntervalMs: read(r, env, S.positionInterval),
    metricsIntervalMs: read(r, env, S.metricsInterval),
    sessionTtlMs: read(r, env, S.sessionTtl),
    queueTimeoutMs: read(r, env, S.queueTimeout),
    maxRunMs: read(r, env, S.maxRun),
  };
  for (const key of r.unknownKeys()) problems.push(`tasks.${key} (config file) is not a tasks setting (known: ${KEYS.join(', ')})`);
  problems.push(...r.problems);
  return config;
}

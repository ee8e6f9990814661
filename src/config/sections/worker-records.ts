/** The worker records' settings (retention of the `workers` table). */
import { TIMER } from '../../common/config-reader';
import { group, secs, str } from '../setting';

/** Worker records: written behind the request path (docs: "Database and worker records"). */
export const WORKER_RECORD_SETTINGS = group('', '', {
  heartbeatFlushInterval: secs({
    env: 'HEARTBEAT_FLUSH_INTERVAL_SECS',
    yaml: 'heartbeat_flush_interval_secs',
    default: 5,
    opts: TIMER,
    reload: 'restart',
    fields: ['heartbeatFlushIntervalMs'],
    table: 'worker-records',
    doc: 'write-behind period for worker heartbeat timestamps: heartbeats are kept in memory and written for all workers in one statement on this period. Connects and disconnects are written at once, not on this period',
  }),
  staleSweepInterval: secs({
    env: 'STALE_SWEEP_INTERVAL_SECS',
    yaml: 'stale_sweep_interval_secs',
    default: 60,
    opts: TIMER,
    reload: 'restart',
    fields: ['staleSweepIntervalMs'],
    table: 'worker-records',
    doc: 'period of the stale worker-record cleanup job (it also runs once at boot)',
  }),
  workerRecordRetention: secs({
    env: 'WORKER_RECORD_RETENTION_SECS',
    yaml: 'worker_record_retention_secs',
    default: 7 * 24 * 3600,
    opts: { above: 0 },
    reload: 'restart',
    fields: ['workerRecordRetentionMs'],
    docDefault: '`604800` (7 days)',
    table: 'worker-records',
    doc: 'offline worker records whose disconnect is older than this are deleted',
  }),
  recentWorkerWindow: secs({
    env: 'RECENT_WORKER_WINDOW_SECS',
    yaml: 'recent_worker_window_secs',
    default: 300,
    opts: { min: 0 },
    reload: 'restart',
    fields: ['recentWorkerWindowMs'],
    table: 'worker-records',
    doc: 'a model served by a worker connected now, or disconnected within this window, is still "known": requests for it queue (while workers reconnect after a restart, say) instead of answering 404. `0` = only connected workers count',
  }),
  instanceId: str({
    env: 'INSTANCE_ID',
    yaml: 'instance_id',
    reload: 'restart',
    fields: ['instanceId'],
    docDefault: 'random `gw-xxxxxxxx` per start',
    table: 'worker-records',
    doc: "this gateway's id in `worker_records.gateway_instance_id` (`[A-Za-z0-9][A-Za-z0-9._-]{0,63}`); keep it stable across restarts so records a crashed instance left online are closed at its next boot",
  }),
});

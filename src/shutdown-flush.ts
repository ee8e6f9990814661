import type { INestApplicationContext, Type } from '@nestjs/common';
import { ApiKeysService } from './api-keys/api-keys.service';
import { JobArtifactRecorder } from './artifacts/job-artifact-recorder.service';
import { AuditTrail } from './governance/audit-trail';
import { LifecycleService } from './lifecycle/lifecycle.service';
import { TypeOrmWorkerRecords } from './registry/worker-records.service';
import { TypeOrmUsageRecorder } from './usage/usage-recorder.service';

/**
 * Every write-behind queue: data a client or operator was already told about (a usage row, a job
 * artifact whose id the client holds, an audit row, a worker's state, a key's last use) that is
 * still in memory. Each one's `beforeApplicationShutdown` writes what it holds (and nothing
 * else), so it is what runs, again, on a second signal. A new write-behind queue belongs here.
 */
const WRITE_BEHIND: ReadonlyArray<Type<{ beforeApplicationShutdown(): Promise<void> }>> = [
  TypeOrmUsageRecorder,
  JobArtifactRecorder,
  AuditTrail,
  LifecycleService,
  TypeOrmWorkerRecords,
  ApiKeysService,
];

export type FlushOutcome = 'flushed' | 'timed_out';

/**
 * Writes every write-behind queue now, all at once, without waiting for the drain the first
 * signal started; gives up after `timeoutMs`. Never rejects (a queue that fails logs, as always).
 */
export async function flushWriteBehind(app: INestApplicationContext, timeoutMs: number): Promise<FlushOutcome> {
  const flushes = WRITE_BEHIND.map(async (type) => {
    let queue: { beforeApplicationShutdown(): Promise<void> };
    try {
      queue = app.get(type, { strict: false });
    } catch {
      return; // not part of this app
    }
    await queue.beforeApplicationShutdown().catch(() => undefined);
  });
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<FlushOutcome>((resolve) => (timer = setTimeout(() => resolve('timed_out'), timeoutMs)));
  try {
    return await Promise.race([Promise.all(flushes).then((): FlushOutcome => 'flushed'), timedOut]);
  } finally {
    clearTimeout(timer);
  }
}

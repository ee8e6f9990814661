import { Logger } from '@nestjs/common';
import { FakeClock } from '../../test/support/fake-clock';
import { loadConfig } from '../config';
import type { AuditContext } from './audit-context';
import { LifecycleTaskBook } from './lifecycle-task-book';
import type { TaskPart } from './lifecycle-task';
import { LoadTaskRecord, LoadTaskStore } from './load-task-store';
import type { RunningTask } from './running-task';

/** Every row written, in order; a write can be held open to play a slow database. */
class RecordingStore extends LoadTaskStore {
  readonly saved: LoadTaskRecord[] = [];
  /** When each row was written (the fake clock's time). */
  readonly savedAt: number[] = [];
  hold: Promise<void> | undefined;
  constructor(private readonly clock: FakeClock) {
    super();
  }
  async save(task: LoadTaskRecord): Promise<void> {
    if (this.hold) await this.hold;
    this.saved.push(structuredClone(task));
    this.savedAt.push(this.clock.now());
  }
  async get(): Promise<LoadTaskRecord | undefined> {
    return undefined;
  }
  async unfinished(): Promise<LoadTaskRecord[]> {
    return [];
  }
  async deleteUpdatedBefore(): Promise<number> {
    return 0;
  }
}

/** Lets the write queue run what it was given. */
const settle = () => new Promise<void>((resolve) => setImmediate(resolve));

/**
 * What other replicas read of a running model load is its row: progress reaches the row within
 * PROGRESS_WRITE_MS (1 s; issue 18: a lifecycle task made on one replica holds on all within 1 s),
 * at most one progress write a second per load.
 */
describe('LifecycleTaskBook: model load progress written behind', () => {
  let clock: FakeClock;
  let store: RecordingStore;
  let book: LifecycleTaskBook;
  let rt: RunningTask;
  let part: TaskPart;

  const report = (progress: number) => {
    part.progress = progress;
    part.status = 'loading';
    book.changed(rt, false);
  };
  const progressSaved = () => store.saved.map((r) => r.parts[0].progress);

  beforeEach(async () => {
    clock = new FakeClock();
    store = new RecordingStore(clock);
    book = new LifecycleTaskBook(loadConfig({ PROVIDER_NAME: 'local' }), clock, store, new Logger('test'));
    part = { workerId: 'w1', name: 'n1', pool: 'local', status: 'sent', progress: 0 };
    const task = { id: 'load-1', operation: 'model-load' as const, modelId: 'big', options: {}, parts: [part], createdAt: clock.now(), updatedAt: clock.now() };
    rt = { task, parts: new Map(), audit: {} as AuditContext, settled: Promise.resolve(), settle: () => undefined, persistedAt: 0 };
    book.add(rt);
    book.changed(rt, true); // accepted: written at once
    await settle();
  });

  it('a report within a second of the last write reaches the row when that second ends, the latest of them only', async () => {
    expect(progressSaved()).toEqual([0]);
    clock.advance(100);
    report(0.1);
    clock.advance(300);
    report(0.2);
    report(0.3);
    await settle();
    expect(progressSaved()).toEqual([0]);
    clock.advance(599);
    await settle();
    expect(progressSaved()).toEqual([0]);
    clock.advance(1);
    await settle();
    expect(progressSaved()).toEqual([0, 0.3]);
    // Quiet for longer than the interval: the next report is written at once.
    clock.advance(5000);
    report(0.6);
    await settle();
    expect(progressSaved()).toEqual([0, 0.3, 0.6]);
  });

  it('a steady stream of reports is written once a second, each row carrying the latest', async () => {
    for (let ms = 50; ms <= 10_000; ms += 50) {
      clock.advance(50);
      report(ms / 10_000);
      await settle();
    }
    clock.advance(1000);
    await settle();
    // The accepted row at 0, then one a second from 1 s to 11 s (the last report, made at 10 s).
    expect(store.savedAt.map((t) => t - store.savedAt[0])).toEqual(Array.from({ length: 12 }, (_, i) => i * 1000));
    expect(progressSaved().at(-1)).toBe(1);
  });

  it('a state change is written at once and takes the pending progress with it', async () => {
    clock.advance(200);
    report(0.4);
    part.status = 'completed';
    part.progress = 1;
    rt.task.finishedAt = clock.now();
    book.changed(rt, true);
    await settle();
    expect(store.saved.map((r) => r.status)).toEqual(['loading', 'completed']);
    clock.advance(5000);
    await settle();
    expect(store.saved).toHaveLength(2);
    expect(clock.pendingTimers()).toBe(0);
  });

  it('a slow database gets one pending row per load, however many reports wait', async () => {
    let release!: () => void;
    store.hold = new Promise<void>((resolve) => (release = resolve));
    for (let i = 1; i <= 10; i++) {
      clock.advance(1000);
      report(i / 10);
      await settle();
    }
    expect(store.saved).toHaveLength(1);
    store.hold = undefined;
    release();
    await book.whenIdle();
    // The write under way when the database stalled, then one row with the latest progress.
    expect(progressSaved()).toEqual([0, 0.1, 1]);
  });

  it('at shutdown the progress a timer holds back is written', async () => {
    clock.advance(100);
    report(0.5);
    book.flushProgress();
    await book.whenIdle();
    expect(progressSaved()).toEqual([0, 0.5]);
  });
});

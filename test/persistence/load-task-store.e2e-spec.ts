import { DataSource } from 'typeorm';
import { LoadTaskEntity } from '../../src/lifecycle/load-task.entity';
import { LoadTaskRecord } from '../../src/lifecycle/load-task-store';
import { TypeOrmLoadTaskStore } from '../../src/lifecycle/load-task-store.typeorm';
import { createTestDatabase, TestDatabase } from './support/test-database';

describe('TypeOrmLoadTaskStore', () => {
  let db: TestDatabase;
  let ds: DataSource;
  let store: TypeOrmLoadTaskStore;

  const task = (over: Partial<LoadTaskRecord> = {}): LoadTaskRecord => ({
    id: 'load-1',
    modelId: 'meta-llama/Llama-3.1-70B-Instruct',
    status: 'loading',
    options: { quantization: 'awq-4bit', gpuMemoryBudgetMB: 40000, evictModel: 'llama3:8b' },
    parts: [{ workerId: 'w-1', name: 'gpu-node-1', pool: 'local', status: 'loading', progress: 0.45, etaSecs: 180, sentAt: 1_000 }],
    gatewayInstanceId: 'gw-a',
    createdAt: 1_000,
    updatedAt: 2_000,
    ...over,
  });

  beforeAll(async () => {
    db = await createTestDatabase('load_tasks');
    ds = await db.connect();
    await ds.runMigrations();
  });
  afterAll(() => db.dispose());
  beforeEach(async () => {
    await ds.getRepository(LoadTaskEntity).clear();
    store = new TypeOrmLoadTaskStore(ds.getRepository(LoadTaskEntity));
  });

  it('round-trips a task, its options and its workers', async () => {
    await store.save(task());
    expect(await store.get('load-1')).toEqual(task());
    expect(await store.get('load-missing')).toBeUndefined();
    expect(await store.get('load-\u0000')).toBeUndefined();
  });

  it('saving again replaces status, error, workers and times, keeping what the task was asked', async () => {
    await store.save(task());
    const done = task({
      status: 'failed',
      error: 'gpu-node-1: failed: out of memory',
      parts: [{ workerId: 'w-1', name: 'gpu-node-1', pool: 'local', status: 'failed', progress: 0.5, error: 'failed: out of memory' }],
      updatedAt: 9_000,
      finishedAt: 9_000,
      options: {},
      createdAt: 5,
    });
    await store.save(done);
    expect(await store.get('load-1')).toEqual({ ...done, options: task().options, createdAt: 1_000 });
  });

  it("lists one instance's unfinished tasks, oldest first", async () => {
    await store.save(task({ id: 'load-b', createdAt: 2 }));
    await store.save(task({ id: 'load-a', createdAt: 1 }));
    await store.save(task({ id: 'load-done', status: 'completed', finishedAt: 3 }));
    await store.save(task({ id: 'load-other', gatewayInstanceId: 'gw-b' }));
    expect((await store.unfinished('gw-a')).map((t) => t.id)).toEqual(['load-a', 'load-b']);
  });

  it('deletes the tasks last changed before the cutoff', async () => {
    await store.save(task({ id: 'load-old', updatedAt: 100 }));
    await store.save(task({ id: 'load-new', updatedAt: 200 }));
    expect(await store.deleteUpdatedBefore(200)).toBe(1);
    expect(await store.get('load-old')).toBeUndefined();
    expect(await store.get('load-new')).toBeDefined();
  });
});

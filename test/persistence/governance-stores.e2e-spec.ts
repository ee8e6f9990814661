import { DataSource } from 'typeorm';
import { loadConfig } from '../../src/config';
import { AuditRetention } from '../../src/governance/audit-retention';
import { StaleCleanupService } from '../../src/registry/stale-cleanup.service';
import { WorkerRecordEntity } from '../../src/registry/worker-record.entity';
import { FakeClock } from '../support/fake-clock';
import { AuditEntryEntity } from '../../src/governance/audit-entry.entity';
import { AuditEntry } from '../../src/governance/audit-log';
import { TypeOrmAuditLog } from '../../src/governance/audit-log.typeorm';
import { OpTokenNonceEntity } from '../../src/governance/op-token-nonce.entity';
import { TypeOrmNonceStore } from '../../src/governance/nonce-store.typeorm';
import { createTestDatabase, TestDatabase, testConfig } from './support/test-database';

describe('TypeOrmNonceStore', () => {
  let db: TestDatabase;
  let ds: DataSource;
  let store: TypeOrmNonceStore;

  beforeAll(async () => {
    db = await createTestDatabase('nonces');
    ds = await db.connect();
    await ds.runMigrations();
  });
  afterAll(() => db.dispose());
  beforeEach(async () => {
    await ds.getRepository(OpTokenNonceEntity).clear();
    store = new TypeOrmNonceStore(ds.getRepository(OpTokenNonceEntity));
  });

  it('claims a nonce once; a second claim while it lives is refused', async () => {
    expect(await store.claim('n-00000001', 2_000, 1_000)).toBe(true);
    expect(await store.claim('n-00000001', 2_500, 1_500)).toBe(false);
    expect(await store.claim('n-00000002', 2_000, 1_500)).toBe(true);
  });

  it('a nonce whose time has passed may be claimed again even before it is pruned', async () => {
    expect(await store.claim('n-00000003', 2_000, 1_000)).toBe(true);
    expect(await store.claim('n-00000003', 9_000, 2_001)).toBe(true);
    expect(await store.claim('n-00000003', 9_500, 8_000)).toBe(false);
  });

  it('of concurrent claims of one nonce, one wins (also from a second connection)', async () => {
    const other = new TypeOrmNonceStore((await db.connect()).getRepository(OpTokenNonceEntity));
    const results = await Promise.all([
      store.claim('n-race-0001', 5_000, 1_000),
      other.claim('n-race-0001', 5_000, 1_000),
      store.claim('n-race-0001', 5_000, 1_000),
    ]);
    expect(results.filter(Boolean)).toHaveLength(1);
  });

  it('a claim of an expired nonce that the cleanup job prunes at that very moment succeeds (no error), and only once', async () => {
    const rows = ds.getRepository(OpTokenNonceEntity);
    await store.claim('n-pruned-01', 2_000, 1_000);
    // The claim's INSERT meets the expired row; the prune deletes it before the claim looks again.
    const racing = new Proxy(rows, {
      get(target, prop, receiver) {
        if (prop !== 'insert') return Reflect.get(target, prop, receiver);
        return async (...args: Parameters<typeof rows.insert>) => {
          try {
            return await target.insert(...args);
          } catch (e) {
            await new TypeOrmNonceStore(rows).prune(3_000);
            throw e;
          }
        };
      },
    });
    const claiming = new TypeOrmNonceStore(racing);
    await expect(claiming.claim('n-pruned-01', 9_000, 3_000)).resolves.toBe(true);
    await expect(claiming.claim('n-pruned-01', 9_000, 3_500)).resolves.toBe(false);
    expect((await rows.find()).map((r) => [r.nonce, r.expiresAt])).toEqual([['n-pruned-01', 9_000]]);
  });

  it('prunes only the expired nonces', async () => {
    await store.claim('n-expired-1', 1_000, 0);
    await store.claim('n-expired-2', 1_999, 0);
    await store.claim('n-alive-001', 2_000, 0);
    expect(await store.prune(2_000)).toBe(2);
    expect((await ds.getRepository(OpTokenNonceEntity).find()).map((r) => [r.nonce, r.expiresAt])).toEqual([['n-alive-001', 2_000]]);
  });
});

describe('TypeOrmAuditLog', () => {
  let db: TestDatabase;
  let ds: DataSource;
  let log: TypeOrmAuditLog;

  const entry = (over: Partial<AuditEntry> = {}): AuditEntry => ({
    at: 1_000,
    operation: 'model-load',
    modelId: 'llama3:70b',
    scope: null,
    target: { pool: 'local', replicas: 2 },
    workers: ['w-1', 'w-2'],
    signers: ['alice', 'bob'],
    nonce: 'nonce-0001',
    adminIdentity: 'sha256:5e884898da28',
    outcome: 'accepted',
    status: 202,
    errorCode: null,
    error: null,
    taskId: 'load-1',
    action: 'lifecycle.model-load',
    actor: { kind: 'sso', subject: 'user-42', name: 'Ada' },
    role: 'operator',
    sourceAddress: '192.0.2.7',
    correlationId: 'corr-1',
    targetId: null,
    summary: null,
    ...over,
  });

  beforeAll(async () => {
    db = await createTestDatabase('audit');
    ds = await db.connect();
    await ds.runMigrations();
  });
  afterAll(() => db.dispose());
  beforeEach(async () => {
    await ds.getRepository(AuditEntryEntity).clear();
    log = new TypeOrmAuditLog(ds.getRepository(AuditEntryEntity));
  });

  it('round-trips every field, JSON ones and nulls included', async () => {
    await log.append(entry());
    await log.append(
      entry({
        operation: 'cache-flush',
        modelId: null,
        scope: 'tenant',
        target: { tenantId: 'community-x' },
        workers: [],
        signers: null,
        nonce: null,
        adminIdentity: null,
        outcome: 'refused',
        status: 401,
        errorCode: 'op_token_missing',
        error: 'no token',
        taskId: null,
      }),
    );
    const [refused, accepted] = await log.list({ limit: 10 });
    expect(accepted).toEqual({ ...entry(), id: expect.any(Number) });
    expect(refused).toMatchObject({
      operation: 'cache-flush',
      modelId: null,
      scope: 'tenant',
      target: { tenantId: 'community-x' },
      workers: [],
      signers: null,
      outcome: 'refused',
      errorCode: 'op_token_missing',
      taskId: null,
    });
    expect(refused.id).toBeGreaterThan(accepted.id);
  });

  it('lists newest first (by insertion, whatever the clock said), filtered and limited, and pages with before', async () => {
    await log.append(entry({ at: 3_000, operation: 'model-unload', outcome: 'accepted', taskId: 'unload-1' }));
    await log.append(entry({ at: 2_000, operation: 'model-load', outcome: 'refused', status: 409, taskId: null }));
    await log.append(entry({ at: 4_000, operation: 'model-unload', outcome: 'completed', status: 200, taskId: 'unload-1' }));
    await log.append(entry({ at: 5_000, operation: 'cache-flush', modelId: 'other', outcome: 'failed', status: 502, taskId: 'flush-1' }));
    const all = await log.list({ limit: 100 });
    expect(all.map((r) => r.at)).toEqual([5_000, 4_000, 2_000, 3_000]);
    expect((await log.list({ operation: 'model-unload', limit: 100 })).map((r) => r.outcome)).toEqual(['completed', 'accepted']);
    expect((await log.list({ outcome: 'refused', limit: 100 })).map((r) => r.status)).toEqual([409]);
    expect((await log.list({ modelId: 'other', limit: 100 })).map((r) => r.taskId)).toEqual(['flush-1']);
    expect((await log.list({ taskId: 'unload-1', limit: 100 })).map((r) => r.outcome)).toEqual(['completed', 'accepted']);
    expect((await log.list({ since: 3_000, until: 5_000, limit: 100 })).map((r) => r.at)).toEqual([4_000, 3_000]);
    const firstPage = await log.list({ limit: 2 });
    expect(firstPage.map((r) => r.at)).toEqual([5_000, 4_000]);
    expect((await log.list({ limit: 2, before: firstPage[1].id })).map((r) => r.at)).toEqual([2_000, 3_000]);
  });

  it('stores admin actions (issue 21) and filters them by actor, action and target; a lifecycle row without an action gets lifecycle.<operation>', async () => {
    const admin = (over: Partial<AuditEntry>) =>
      entry({
        operation: 'admin',
        modelId: null,
        target: {},
        workers: [],
        signers: null,
        nonce: null,
        adminIdentity: null,
        taskId: null,
        outcome: 'completed',
        status: 200,
        ...over,
      });
    await log.append(
      admin({
        action: 'keys.create',
        targetId: 'key-1',
        summary: { name: 'k', tenant: 'team-a' },
        actor: { kind: 'admin-token', subject: 'admin-token' },
        role: 'admin',
      }),
    );
    await log.append(admin({ action: 'tenants.put', targetId: 'team-a', summary: { rpm: 5 } }));
    await log.append(
      admin({ action: 'config.reload', targetId: 'config', actor: { kind: 'sighup', subject: 'sighup' }, sourceAddress: null, correlationId: null }),
    );
    await log.append(entry({ action: undefined, actor: undefined, role: undefined }));
    const [lifecycle, reload, tenant, key] = await log.list({ limit: 10 });
    expect(key).toMatchObject({
      action: 'keys.create',
      actor: { kind: 'admin-token', subject: 'admin-token' },
      role: 'admin',
      targetId: 'key-1',
      summary: { name: 'k', tenant: 'team-a' },
    });
    expect(tenant).toMatchObject({
      action: 'tenants.put',
      actor: { kind: 'sso', subject: 'user-42', name: 'Ada' },
      role: 'operator',
      sourceAddress: '192.0.2.7',
      correlationId: 'corr-1',
    });
    expect(reload).toMatchObject({ action: 'config.reload', actor: { kind: 'sighup', subject: 'sighup' }, sourceAddress: null });
    expect(lifecycle).toMatchObject({ action: 'lifecycle.model-load', actor: null, role: null });
    expect((await log.list({ actor: 'user-42', limit: 10 })).map((r) => r.action)).toEqual(['tenants.put']);
    expect((await log.list({ action: 'keys.create', limit: 10 })).map((r) => r.targetId)).toEqual(['key-1']);
    expect((await log.list({ targetId: 'config', limit: 10 })).map((r) => r.action)).toEqual(['config.reload']);
  });

  it('keeps a row whose texts hold a NUL character (PostgreSQL refuses one): it is written as U+FFFD', async () => {
    await log.append(
      entry({
        modelId: 'm\u0000x',
        target: { pool: 'p\u0000' },
        outcome: 'refused',
        status: 422,
        errorCode: 'validation_failed',
        error: "Model 'm\u0000x'",
        taskId: null,
      }),
    );
    const [row] = await log.list({ limit: 1 });
    expect(row).toMatchObject({ modelId: 'm\uFFFDx', target: { pool: 'p\u0000' }, error: "Model 'm\uFFFDx'", outcome: 'refused' });
  });

  it('prunes rows written before a cutoff: all of them, or only the refusals at the admin token check', async () => {
    await log.append(entry({ at: 1_000, outcome: 'refused', status: 401, errorCode: 'unauthorized', adminIdentity: null, taskId: null }));
    await log.append(entry({ at: 1_000, outcome: 'refused', status: 403, errorCode: 'forbidden', taskId: null }));
    await log.append(entry({ at: 1_000, outcome: 'refused', status: 401, errorCode: 'op_token_replayed', taskId: null }));
    await log.append(entry({ at: 1_000, outcome: 'accepted', taskId: 'load-old' }));
    await log.append(entry({ at: 5_000, outcome: 'refused', status: 401, errorCode: 'unauthorized', adminIdentity: null, taskId: null }));
    await log.append(entry({ at: 5_000, outcome: 'completed', status: 200, taskId: 'load-new' }));
    const left = async () => (await log.list({ limit: 100 })).map((r) => [r.at, r.errorCode ?? r.outcome]);

    expect(await log.deleteBefore(5_000, 'unauthenticated')).toBe(2);
    expect(await left()).toEqual([
      [5_000, 'completed'],
      [5_000, 'unauthorized'],
      [1_000, 'accepted'],
      [1_000, 'op_token_replayed'],
    ]);
    expect(await log.deleteBefore(5_000, 'all')).toBe(2);
    expect(await left()).toEqual([
      [5_000, 'completed'],
      [5_000, 'unauthorized'],
    ]);
  });

  it('the cleanup sweep prunes refusals at the admin token check after 30 days by default, and every row only with a retention set', async () => {
    const DAY_MS = 24 * 3600_000;
    const clock = new FakeClock(400 * DAY_MS);
    const daysAgo = (days: number) => clock.now() - days * DAY_MS;
    const unauthenticated = { outcome: 'refused' as const, status: 401, errorCode: 'unauthorized', adminIdentity: null, taskId: null };
    const sweepWith = async (env: Record<string, string>) => {
      const config = testConfig(db.url, { governance: loadConfig(env).governance });
      const cleanup = new StaleCleanupService(ds.getRepository(WorkerRecordEntity), clock, config);
      new AuditRetention(log, config, cleanup);
      return (await cleanup.sweep()).pruned;
    };
    await log.append(entry({ at: daysAgo(31), ...unauthenticated }));
    await log.append(entry({ at: daysAgo(29), ...unauthenticated }));
    await log.append(entry({ at: daysAgo(200), outcome: 'accepted' }));
    await log.append(entry({ at: daysAgo(100), outcome: 'refused', status: 401, errorCode: 'op_token_expired', taskId: null }));
    const left = async () => (await log.list({ limit: 100 })).map((r) => Math.round((clock.now() - r.at) / DAY_MS));

    expect(await sweepWith({})).toEqual({ lifecycle_audit: 1 });
    expect(await left()).toEqual([100, 200, 29]);
    expect(await sweepWith({ GOVERNANCE_AUDIT_RETENTION_DAYS: '150', GOVERNANCE_UNAUTHENTICATED_AUDIT_RETENTION_DAYS: '0' })).toEqual({ lifecycle_audit: 1 });
    expect(await left()).toEqual([100, 29]);
    expect(await sweepWith({ GOVERNANCE_AUDIT_RETENTION_DAYS: '50', GOVERNANCE_UNAUTHENTICATED_AUDIT_RETENTION_DAYS: '7' })).toEqual({ lifecycle_audit: 2 });
    expect(await left()).toEqual([]);
  });

  it('keeps at most 1024 characters of an error message', async () => {
    await log.append(entry({ outcome: 'failed', error: 'x'.repeat(5000) }));
    expect((await log.list({ limit: 1 }))[0].error).toHaveLength(1024);
  });
});

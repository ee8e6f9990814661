import { DataSource } from 'typeorm';
import { createTestDatabase, TestDatabase } from './support/test-database';

const BASE_TABLES = ['providers', 'worker_records', 'api_keys', 'tenants', 'usage_records'];
const LIFECYCLE_TABLES = ['op_token_nonces', 'lifecycle_audit', 'lifecycle_tasks'];
const TABLES = [...BASE_TABLES, 'artifacts', 'artifact_tags', 'artifact_transcripts', ...LIFECYCLE_TABLES];

describe('migrations', () => {
  let db: TestDatabase;
  let ds: DataSource;

  beforeAll(async () => {
    db = await createTestDatabase('migrations');
    ds = await db.connect();
  });

  afterAll(async () => {
    await db.dispose();
  });

  async function existingTables(): Promise<string[]> {
    const qr = ds.createQueryRunner();
    try {
      const found: string[] = [];
      for (const t of TABLES) if (await qr.hasTable(t)) found.push(t);
      return found;
    } finally {
      await qr.release();
    }
  }

  /** Columns of an index in definition order, read from the database's own catalog. */
  async function indexColumns(index: string): Promise<string[]> {
    if (db.kind === 'sqlite') {
      const rows: Array<{ name: string }> = await ds.query(`PRAGMA index_info("${index}")`);
      return rows.map((r) => r.name);
    }
    const rows: Array<{ indexdef: string }> = await ds.query('SELECT indexdef FROM pg_indexes WHERE indexname = $1 AND schemaname = current_schema()', [index]);
    const columns = /\(([^)]*)\)/.exec(rows[0]?.indexdef ?? '')?.[1] ?? '';
    return columns.split(',').map((c) => c.trim().replace(/"/g, ''));
  }

  it('are loaded from the top-level migrations folder', () => {
    expect(ds.migrations.map((m) => m.name)).toContain('InitialSchema1763683200000');
  });

  it('up creates providers, worker_records, api_keys, tenants, usage_records, the artifact tables and the lifecycle tables', async () => {
    expect(await existingTables()).toEqual([]);
    const applied = await ds.runMigrations();
    expect(applied.map((m) => m.name)).toEqual([
      'InitialSchema1763683200000',
      'ProviderRouting1764547200000',
      'ApiKeysTenants1764633600000',
      'UsageRecords1764720000000',
      'PoolAliases1764806400000',
      'TenantSessionBudgets1764849600000',
      'Governance1764892800000',
      'LifecycleTasks1764979200000',
      'Artifacts1765065600000',
      'TenantPools1765170000000',
      'Chargeback1765250000000',
      'MaxConcurrent1765256400000',
      'AdminAudit1765300000000',
      'PoolFirstByteTimeout1765340000000',
      'PoolTranslation1765400000000',
    ]);
    expect(await existingTables()).toEqual(TABLES);
    if (db.kind === 'postgres') {
      // Isolation: the tables landed in this run's schema, not in public.
      const [{ schema }] = await ds.query('SELECT current_schema() AS schema');
      expect(db.url).toContain(`schema=${schema}`);
      const [{ n }] = await ds.query(
        `SELECT count(*)::int AS n FROM information_schema.tables WHERE table_schema = current_schema() AND table_name IN (${TABLES.map((t) => `'${t}'`).join(', ')})`,
      );
      expect(n).toBe(TABLES.length);
    }
  });

  it('creates the columns the entities map', async () => {
    const qr = ds.createQueryRunner();
    try {
      for (const entity of ds.entityMetadatas) {
        const table = await qr.getTable(entity.tableName);
        expect(table).toBeDefined();
        const columns = table!.columns.map((c) => c.name).sort();
        expect(columns).toEqual(entity.columns.map((c) => c.databaseName).sort());
        const nullable = table!.columns
          .filter((c) => c.isNullable)
          .map((c) => c.name)
          .sort();
        expect(nullable).toEqual(
          entity.columns
            .filter((c) => c.isNullable)
            .map((c) => c.databaseName)
            .sort(),
        );
      }
    } finally {
      await qr.release();
    }
  });

  it('indexes worker_records by (state, last_heartbeat_at) and provider, api_keys uniquely by key_hash', async () => {
    const qr = ds.createQueryRunner();
    try {
      const workers = await qr.getTable('worker_records');
      const byName = new Map(workers!.indices.map((i) => [i.name, i]));
      // TypeORM's PostgreSQL introspection does not keep column order; indexColumns() checks it.
      expect(byName.get('IDX_worker_records_state_heartbeat')?.columnNames.sort()).toEqual(['last_heartbeat_at', 'state']);
      expect(await indexColumns('IDX_worker_records_state_heartbeat')).toEqual(['state', 'last_heartbeat_at']);
      expect(byName.get('IDX_worker_records_provider')?.columnNames).toEqual(['provider']);
      const keys = await qr.getTable('api_keys');
      const unique = keys!.indices.find((i) => i.name === 'UQ_api_keys_key_hash');
      expect(unique?.isUnique).toBe(true);
      expect(unique?.columnNames).toEqual(['key_hash']);
    } finally {
      await qr.release();
    }
  });

  it('indexes usage_records by received_at, and by tenant and key id over time', async () => {
    const qr = ds.createQueryRunner();
    try {
      const usage = await qr.getTable('usage_records');
      expect(usage!.primaryColumns.map((c) => c.name)).toEqual(['id']);
      expect(usage!.indices.map((i) => i.name).sort()).toEqual([
        'IDX_usage_records_key_received_at',
        'IDX_usage_records_received_at',
        'IDX_usage_records_tenant_received_at',
      ]);
      expect(await indexColumns('IDX_usage_records_received_at')).toEqual(['received_at']);
      expect(await indexColumns('IDX_usage_records_tenant_received_at')).toEqual(['tenant', 'received_at']);
      expect(await indexColumns('IDX_usage_records_key_received_at')).toEqual(['key_id', 'received_at']);
    } finally {
      await qr.release();
    }
  });

  it('keys artifacts by (tenant, id) and indexes them for listings, tag filters and retention', async () => {
    const qr = ds.createQueryRunner();
    try {
      const artifacts = await qr.getTable('artifacts');
      expect(artifacts!.primaryColumns.map((c) => c.name).sort()).toEqual(['id', 'tenant']);
      expect(await indexColumns('IDX_artifacts_created_at')).toEqual(['created_at']);
      expect(await indexColumns('IDX_artifacts_tenant_created_at')).toEqual(['tenant', 'created_at']);
      expect(await indexColumns('IDX_artifacts_tenant_session_created_at')).toEqual(['tenant', 'session_id', 'created_at']);
      const tags = await qr.getTable('artifact_tags');
      expect(tags!.primaryColumns.map((c) => c.name).sort()).toEqual(['artifact_id', 'tag', 'tenant']);
      expect(await indexColumns('IDX_artifact_tags_tenant_tag')).toEqual(['tenant', 'tag']);
      expect(await indexColumns('IDX_artifact_tags_created_at')).toEqual(['created_at']);
      const transcripts = await qr.getTable('artifact_transcripts');
      expect(transcripts!.primaryColumns.map((c) => c.name).sort()).toEqual(['artifact_id', 'tenant']);
      expect(await indexColumns('IDX_artifact_transcripts_created_at')).toEqual(['created_at']);
    } finally {
      await qr.release();
    }
  });

  it('indexes the lifecycle tables: nonces by expiry, audit rows by time (and operation), tasks by update time and by (status, instance)', async () => {
    expect(await indexColumns('IDX_op_token_nonces_expires_at')).toEqual(['expires_at']);
    expect(await indexColumns('IDX_lifecycle_audit_at')).toEqual(['at']);
    expect(await indexColumns('IDX_lifecycle_audit_operation_at')).toEqual(['operation', 'at']);
    expect(await indexColumns('IDX_lifecycle_tasks_updated_at')).toEqual(['updated_at']);
    expect(await indexColumns('IDX_lifecycle_tasks_status_instance')).toEqual(['status', 'gateway_instance_id']);
    const qr = ds.createQueryRunner();
    try {
      expect((await qr.getTable('op_token_nonces'))!.primaryColumns.map((c) => c.name)).toEqual(['nonce']);
      const audit = await qr.getTable('lifecycle_audit');
      expect(audit!.primaryColumns.map((c) => [c.name, c.isGenerated])).toEqual([['id', true]]);
    } finally {
      await qr.release();
    }
  });

  it('numbers audit rows in insertion order', async () => {
    const repo = ds.getRepository('AuditEntryEntity');
    const row = { operation: 'model-load', target: {}, workers: [], outcome: 'refused', status: 401 };
    await repo.insert({ ...row, at: 5 });
    await repo.insert({ ...row, at: 1 });
    const ids = (await repo.find({ order: { id: 'ASC' } })).map((r) => r.at);
    expect(ids).toEqual([5, 1]);
    await repo.clear();
  });

  it('rejects a second api key with the same hash', async () => {
    const row = { name: 'k', prefix: 'sk-abc', tenant: 't', enabled: true, createdAt: 1, lastUsedAt: null, revokedAt: null };
    const repo = ds.getRepository('ApiKeyEntity');
    await repo.insert({ ...row, id: 'a', keyHash: 'h1' });
    await expect(repo.insert({ ...row, id: 'b', keyHash: 'h1' })).rejects.toThrow();
    await repo.clear();
  });

  it('running them again applies nothing', async () => {
    expect(await ds.runMigrations()).toEqual([]);
    expect(await ds.showMigrations()).toBe(false);
  });

  it('down drops the tables and forgets the migrations', async () => {
    await ds.undoLastMigration();
    const translation = ds.createQueryRunner();
    try {
      expect(await translation.hasColumn('providers', 'translation')).toBe(false);
      expect(await translation.hasColumn('providers', 'first_byte_timeout_ms')).toBe(true);
    } finally {
      await translation.release();
    }
    await ds.undoLastMigration();
    const firstByte = ds.createQueryRunner();
    try {
      expect(await firstByte.hasColumn('providers', 'first_byte_timeout_ms')).toBe(false);
      expect(await firstByte.hasColumn('providers', 'request_timeout_ms')).toBe(true);
    } finally {
      await firstByte.release();
    }
    await ds.undoLastMigration();
    const audit = ds.createQueryRunner();
    try {
      for (const column of ['action', 'actor_subject', 'summary']) expect(await audit.hasColumn('lifecycle_audit', column)).toBe(false);
      expect(await audit.hasColumn('lifecycle_audit', 'operation')).toBe(true);
      // A row from before the admin audit: up again names its action after its operation.
      await ds.query(`INSERT INTO lifecycle_audit (at, operation, target, workers, outcome, status) VALUES (7, 'cache-flush', '{}', '[]', 'refused', 401)`);
      expect((await ds.runMigrations()).map((m) => m.name)).toEqual([
        'AdminAudit1765300000000',
        'PoolFirstByteTimeout1765340000000',
        'PoolTranslation1765400000000',
      ]);
      expect(await ds.query(`SELECT action, actor_subject FROM lifecycle_audit WHERE at = 7`)).toEqual([
        { action: 'lifecycle.cache-flush', actor_subject: null },
      ]);
      expect(await indexColumns('IDX_lifecycle_audit_action_at')).toEqual(['action', 'at']);
      await ds.query('DELETE FROM lifecycle_audit');
      await ds.undoLastMigration();
      await ds.undoLastMigration();
      await ds.undoLastMigration();
    } finally {
      await audit.release();
    }
    await ds.undoLastMigration();
    const caps = ds.createQueryRunner();
    try {
      expect(await caps.hasColumn('api_keys', 'max_concurrent')).toBe(false);
      expect(await caps.hasColumn('tenants', 'max_concurrent')).toBe(false);
      expect(await caps.hasColumn('tenants', 'pools')).toBe(true);
    } finally {
      await caps.release();
    }
    await ds.undoLastMigration();
    const chargeback = ds.createQueryRunner();
    try {
      expect(await chargeback.hasColumn('usage_records', 'gpu_ms')).toBe(false);
      expect(await chargeback.hasColumn('providers', 'cost_per_gpu_hour')).toBe(false);
      expect(await chargeback.hasColumn('usage_records', 'duration_ms')).toBe(true);
    } finally {
      await chargeback.release();
    }
    await ds.undoLastMigration();
    const pools = ds.createQueryRunner();
    try {
      expect(await pools.hasColumn('tenants', 'pools')).toBe(false);
    } finally {
      await pools.release();
    }
    await ds.undoLastMigration();
    expect(await existingTables()).toEqual([...BASE_TABLES, ...LIFECYCLE_TABLES]);
    await ds.undoLastMigration();
    expect(await existingTables()).toEqual([...BASE_TABLES, 'op_token_nonces', 'lifecycle_audit']);
    await ds.undoLastMigration();
    expect(await existingTables()).toEqual(BASE_TABLES);
    await ds.undoLastMigration();
    const tenants = ds.createQueryRunner();
    try {
      expect(await tenants.hasColumn('tenants', 'session_tokens')).toBe(false);
      expect(await tenants.hasColumn('tenants', 'session_time_secs')).toBe(false);
      expect(await tenants.hasColumn('tenants', 'max_queued')).toBe(true);
    } finally {
      await tenants.release();
    }
    await ds.undoLastMigration();
    const providers = ds.createQueryRunner();
    try {
      expect(await providers.hasColumn('providers', 'aliases')).toBe(false);
      expect(await providers.hasColumn('providers', 'capabilities')).toBe(true);
    } finally {
      await providers.release();
    }
    expect(await existingTables()).toEqual(['providers', 'worker_records', 'api_keys', 'tenants', 'usage_records']);
    await ds.undoLastMigration();
    expect(await existingTables()).toEqual(['providers', 'worker_records', 'api_keys', 'tenants']);
    await ds.undoLastMigration();
    expect(await existingTables()).toEqual(['providers', 'worker_records', 'api_keys']);
    const keys = ds.createQueryRunner();
    try {
      for (const column of ['source', 'rpm', 'tpm', 'priority', 'models', 'expires_at']) expect(await keys.hasColumn('api_keys', column)).toBe(false);
      // The unique index on key_hash survives the table rebuild SQLite needs to drop columns.
      expect((await keys.getTable('api_keys'))!.indices.find((i) => i.name === 'UQ_api_keys_key_hash')?.isUnique).toBe(true);
    } finally {
      await keys.release();
    }
    await ds.undoLastMigration();
    const qr = ds.createQueryRunner();
    try {
      expect(await qr.hasColumn('providers', 'priority')).toBe(false);
      expect(await qr.hasColumn('providers', 'capabilities')).toBe(false);
    } finally {
      await qr.release();
    }
    await ds.undoLastMigration();
    expect(await existingTables()).toEqual([]);
    expect(await ds.showMigrations()).toBe(true);
  });

  it('up works again after down', async () => {
    await ds.runMigrations();
    expect(await existingTables()).toEqual(TABLES);
  });
});

describe('migration ApiKeysTenants1764633600000 on a database with keys', () => {
  let db: TestDatabase;
  let ds: DataSource;

  beforeAll(async () => {
    db = await createTestDatabase('migrations_keys');
    ds = await db.connect();
  });

  afterAll(async () => {
    await db.dispose();
  });

  it('keeps existing api_keys rows (source admin, no limits) and their unique hash', async () => {
    await ds.runMigrations({ transaction: 'each' });
    await ds.undoLastMigration();
    await ds.query(
      `INSERT INTO api_keys (id, name, key_hash, prefix, tenant, enabled, created_at, last_used_at, revoked_at) VALUES ('k1', 'old', 'h1', 'sb-abc', 't', ${db.kind === 'postgres' ? 'true' : '1'}, 5, NULL, NULL)`,
    );
    await ds.runMigrations();
    const rows = await ds.query("SELECT id, source, rpm, tpm, priority, models, expires_at FROM api_keys WHERE id = 'k1'");
    expect(rows).toEqual([{ id: 'k1', source: 'admin', rpm: null, tpm: null, priority: null, models: null, expires_at: null }]);
    await expect(
      ds.query(
        `INSERT INTO api_keys (id, name, key_hash, prefix, tenant, enabled, created_at, source) VALUES ('k2', 'dup', 'h1', '', 't', ${db.kind === 'postgres' ? 'true' : '1'}, 6, 'admin')`,
      ),
    ).rejects.toThrow();
  });
});

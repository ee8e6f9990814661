import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { EntityManager, Repository } from 'typeorm';
import { ApiKeyEntity } from './api-key.entity';
import { ApiKeyRecord, ApiKeyStore } from './api-key-store';

/** Columns rewritten when a key is saved again; `created_at` and `last_used_at` are kept. */
const UPDATED_ON_SAVE = [
  'name',
  'key_hash',
  'prefix',
  'tenant',
  'enabled',
  'source',
  'rpm',
  'tpm',
  'max_concurrent',
  'priority',
  'models',
  'expires_at',
  'revoked_at',
];

/**
 * Up to 5 bound parameters per key (SQLite binds a name once per occurrence): well under SQLite's
 * 32766 and PostgreSQL's 65535 limits.
 */
const MAX_KEYS_PER_STATEMENT = 4000;

@Injectable()
export class TypeOrmApiKeyStore extends ApiKeyStore {
  constructor(@InjectRepository(ApiKeyEntity) private readonly repo: Repository<ApiKeyEntity>) {
    super();
  }

  async loadAll(): Promise<ApiKeyRecord[]> {
    const rows = await this.repo.find({ order: { createdAt: 'ASC', id: 'ASC' } });
    return rows.map(toRecord);
  }

  override async find(id: string): Promise<ApiKeyRecord | undefined> {
    const row = await this.repo.findOneBy({ id });
    return row ? toRecord(row) : undefined;
  }

  override async findByHash(keyHash: string): Promise<ApiKeyRecord | undefined> {
    const row = await this.repo.findOneBy({ keyHash });
    return row ? toRecord(row) : undefined;
  }

  /** Insert-or-update in one statement (ON CONFLICT, supported by SQLite and PostgreSQL). */
  async save(record: ApiKeyRecord): Promise<void> {
    await this.repo.manager.createQueryBuilder().insert().into(ApiKeyEntity).values(toRow(record)).orUpdate(UPDATED_ON_SAVE, ['id']).execute();
  }

  async delete(id: string): Promise<void> {
    await this.repo.delete({ id });
  }

  async recordLastUsed(entries: ReadonlyArray<readonly [string, number]>): Promise<void> {
    if (entries.length === 0) return;
    if (entries.length <= MAX_KEYS_PER_STATEMENT) {
      await updateLastUsed(this.repo.manager, entries);
      return;
    }
    await this.repo.manager.transaction(async (manager) => {
      for (let i = 0; i < entries.length; i += MAX_KEYS_PER_STATEMENT) {
        await updateLastUsed(manager, entries.slice(i, i + MAX_KEYS_PER_STATEMENT));
      }
    });
  }
}

/**
 * One UPDATE for many keys, each with its own time:
 *   SET last_used_at = CASE id WHEN :id0 THEN :at0 … END WHERE id IN (:id0, …)
 * A time never moves `last_used_at` backwards (another gateway may have written a later one).
 */
async function updateLastUsed(manager: EntityManager, entries: ReadonlyArray<readonly [string, number]>): Promise<void> {
  const params: Record<string, string | number> = {};
  const cases: string[] = [];
  const ids: string[] = [];
  entries.forEach(([id, at], i) => {
    params[`id${i}`] = id;
    params[`at${i}`] = at;
    cases.push(`WHEN :id${i} THEN CAST(:at${i} AS BIGINT)`);
    ids.push(`:id${i}`);
  });
  const incoming = `CASE id ${cases.join(' ')} END`;
  await manager
    .createQueryBuilder()
    .update(ApiKeyEntity)
    .set({ lastUsedAt: () => `CASE WHEN last_used_at IS NULL OR last_used_at < ${incoming} THEN ${incoming} ELSE last_used_at END` })
    .where(`id IN (${ids.join(', ')})`)
    .setParameters(params)
    .execute();
}

function toRow(r: ApiKeyRecord): ApiKeyEntity {
  return {
    id: r.id,
    name: r.name,
    keyHash: r.keyHash,
    prefix: r.prefix,
    tenant: r.tenant,
    enabled: r.enabled,
    source: r.source,
    rpm: r.rpm,
    tpm: r.tpm,
    maxConcurrent: r.maxConcurrent ?? null,
    priority: r.priority,
    models: r.models ? [...r.models] : null,
    expiresAt: r.expiresAt,
    createdAt: r.createdAt,
    lastUsedAt: r.lastUsedAt,
    revokedAt: r.revokedAt,
  };
}

function toRecord(row: ApiKeyEntity): ApiKeyRecord {
  return {
    id: row.id,
    name: row.name,
    keyHash: row.keyHash,
    prefix: row.prefix,
    tenant: row.tenant,
    enabled: row.enabled,
    source: row.source,
    rpm: row.rpm,
    tpm: row.tpm,
    ...(row.maxConcurrent != null ? { maxConcurrent: row.maxConcurrent } : {}),
    priority: row.priority,
    models: row.models ?? null,
    expiresAt: row.expiresAt,
    createdAt: row.createdAt,
    lastUsedAt: row.lastUsedAt,
    revokedAt: row.revokedAt,
  };
}

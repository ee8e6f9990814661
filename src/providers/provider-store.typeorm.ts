import { Inject, Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { Repository } from 'typeorm';
import { CLOCK, Clock } from '../common/clock';
import { ProviderEntity } from './provider.entity';
import { ProviderRecord, ProviderStore } from './provider-store';
import { limitFromRow, PROVIDER_LIMITS } from './provider-limits';

/** Columns rewritten when a provider is saved again; `created_at` keeps the first save's time. */
const UPDATED_ON_SAVE = ['secret_hash', ...PROVIDER_LIMITS.map((f) => f.column), 'models', 'capabilities', 'aliases', 'source', 'updated_at'];

@Injectable()
export class TypeOrmProviderStore extends ProviderStore {
  constructor(
    @InjectRepository(ProviderEntity) private readonly repo: Repository<ProviderEntity>,
    @Inject(CLOCK) private readonly clock: Clock,
  ) {
    super();
  }

  async loadAll(): Promise<ProviderRecord[]> {
    const rows = await this.repo.find({ order: { name: 'ASC' } });
    return rows.map(toRecord);
  }

  /** Insert-or-update in one statement (ON CONFLICT, supported by SQLite and PostgreSQL). */
  async save(record: ProviderRecord): Promise<void> {
    const now = this.clock.now();
    await this.repo.manager
      .createQueryBuilder()
      .insert()
      .into(ProviderEntity)
      .values({ ...toRow(record), createdAt: now, updatedAt: now })
      .orUpdate(UPDATED_ON_SAVE, ['name'])
      .execute();
  }

  override async find(name: string): Promise<ProviderRecord | undefined> {
    const row = await this.repo.findOneBy({ name });
    return row ? toRecord(row) : undefined;
  }

  async delete(name: string): Promise<void> {
    await this.repo.delete({ name });
  }
}

// The limits are copied by the table (provider-limits.ts); the rest are not scalars, or not limits.
function toRow(r: ProviderRecord): Omit<ProviderEntity, 'createdAt' | 'updatedAt'> {
  const row: Record<string, unknown> = {
    name: r.name,
    secretHash: r.secretHash,
    models: [...r.models],
    capabilities: r.capabilities,
    aliases: r.aliases,
    source: r.source,
  };
  for (const f of PROVIDER_LIMITS) row[f.key] = f.nullable ? (r[f.key] ?? null) : r[f.key];
  return row as unknown as Omit<ProviderEntity, 'createdAt' | 'updatedAt'>;
}

function toRecord(row: ProviderEntity): ProviderRecord {
  const record: Record<string, unknown> = {
    name: row.name,
    secretHash: row.secretHash,
    models: row.models,
    capabilities: row.capabilities ?? {},
    aliases: row.aliases ?? {},
    source: row.source,
  };
  for (const f of PROVIDER_LIMITS) record[f.key] = limitFromRow(f, row[f.key as keyof ProviderEntity]);
  return record as unknown as ProviderRecord;
}

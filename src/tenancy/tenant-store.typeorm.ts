import { Inject, Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { Repository } from 'typeorm';
import { CLOCK, Clock } from '../common/clock';
import { TenantSettings } from '../config/sections/tenancy';
import { TenantEntity } from './tenant.entity';
import { TenantRecord, TenantStore } from './tenant-store';

const UPDATED_ON_SAVE = [
  'rpm',
  'tpm',
  'tokens_per_day',
  'priority',
  'max_priority',
  'max_queued',
  'max_concurrent',
  'models',
  'session_tokens',
  'session_time_secs',
  'pools',
  'updated_at',
];

@Injectable()
export class TypeOrmTenantStore extends TenantStore {
  constructor(
    @InjectRepository(TenantEntity) private readonly repo: Repository<TenantEntity>,
    @Inject(CLOCK) private readonly clock: Clock,
  ) {
    super();
  }

  async loadAll(): Promise<TenantRecord[]> {
    const rows = await this.repo.find({ order: { id: 'ASC' } });
    return rows.map(toRecord);
  }

  /** Insert-or-update in one statement (ON CONFLICT), then the row as stored (for `created_at`). */
  async save(id: string, settings: TenantSettings): Promise<TenantRecord> {
    const now = this.clock.now();
    await this.repo.manager
      .createQueryBuilder()
      .insert()
      .into(TenantEntity)
      .values({ ...toColumns(settings), id, createdAt: now, updatedAt: now })
      .orUpdate(UPDATED_ON_SAVE, ['id'])
      .execute();
    return toRecord(await this.repo.findOneByOrFail({ id }));
  }

  override async find(id: string): Promise<TenantRecord | undefined> {
    const row = await this.repo.findOneBy({ id });
    return row ? toRecord(row) : undefined;
  }

  async delete(id: string): Promise<void> {
    await this.repo.delete({ id });
  }
}

function toColumns(s: TenantSettings): Omit<TenantEntity, 'id' | 'createdAt' | 'updatedAt'> {
  return {
    rpm: s.rpm ?? null,
    tpm: s.tpm ?? null,
    tokensPerDay: s.tokensPerDay ?? null,
    priority: s.priority ?? null,
    maxPriority: s.maxPriority ?? null,
    maxQueued: s.maxQueued ?? null,
    maxConcurrent: s.maxConcurrent ?? null,
    models: s.models ? [...s.models] : null,
    sessionTokens: s.sessionTokens ?? null,
    sessionTimeSecs: s.sessionTimeSecs ?? null,
    pools: s.pools ? [...s.pools] : null,
  };
}

function toRecord(row: TenantEntity): TenantRecord {
  const settings: TenantSettings = {};
  if (row.rpm !== null) settings.rpm = row.rpm;
  if (row.tpm !== null) settings.tpm = row.tpm;
  if (row.tokensPerDay !== null) settings.tokensPerDay = row.tokensPerDay;
  if (row.priority !== null) settings.priority = row.priority;
  if (row.maxPriority !== null) settings.maxPriority = row.maxPriority;
  if (row.maxQueued !== null) settings.maxQueued = row.maxQueued;
  if (row.maxConcurrent !== null && row.maxConcurrent !== undefined) settings.maxConcurrent = row.maxConcurrent;
  if (row.models !== null && row.models !== undefined) settings.models = row.models;
  if (row.sessionTokens !== null) settings.sessionTokens = row.sessionTokens;
  if (row.sessionTimeSecs !== null) settings.sessionTimeSecs = row.sessionTimeSecs;
  if (row.pools !== null && row.pools !== undefined) settings.pools = row.pools;
  return { id: row.id, settings, createdAt: row.createdAt, updatedAt: row.updatedAt };
}

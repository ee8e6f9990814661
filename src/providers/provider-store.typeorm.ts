import { Inject, Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { Repository } from 'typeorm';
import { CLOCK, Clock } from '../common/clock';
import { ProviderEntity } from './provider.entity';
import { ProviderRecord, ProviderStore } from './provider-store';

/** Columns rewritten when a provider is saved again; `created_at` keeps the first save's time. */
const UPDATED_ON_SAVE = [
  'secret_hash',
  'enabled',
  'max_queue_len',
  'queue_timeout_ms',
  'request_timeout_ms',
  'first_byte_timeout_ms',
  'max_models_per_worker',
  'models',
  'priority',
  'capabilities',
  'aliases',
  'cost_per_gpu_hour',
  'gpus_per_worker',
  'translation',
  'source',
  'updated_at',
];

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

function toRow(r: ProviderRecord): Omit<ProviderEntity, 'createdAt' | 'updatedAt'> {
  return {
    name: r.name,
    secretHash: r.secretHash,
    enabled: r.enabled,
    maxQueueLen: r.maxQueueLen,
    queueTimeoutMs: r.queueTimeoutMs,
    requestTimeoutMs: r.requestTimeoutMs,
    firstByteTimeoutMs: r.firstByteTimeoutMs ?? null,
    maxModelsPerWorker: r.maxModelsPerWorker,
    models: [...r.models],
    priority: r.priority,
    capabilities: r.capabilities,
    aliases: r.aliases,
    costPerGpuHour: r.costPerGpuHour ?? null,
    gpusPerWorker: r.gpusPerWorker ?? null,
    translation: r.translation ?? null,
    source: r.source,
  };
}

function toRecord(row: ProviderEntity): ProviderRecord {
  return {
    name: row.name,
    secretHash: row.secretHash,
    enabled: row.enabled,
    maxQueueLen: row.maxQueueLen,
    queueTimeoutMs: row.queueTimeoutMs,
    requestTimeoutMs: row.requestTimeoutMs,
    firstByteTimeoutMs: row.firstByteTimeoutMs ?? null,
    maxModelsPerWorker: row.maxModelsPerWorker,
    models: row.models,
    priority: row.priority,
    capabilities: row.capabilities ?? {},
    aliases: row.aliases ?? {},
    costPerGpuHour: row.costPerGpuHour ?? null,
    gpusPerWorker: row.gpusPerWorker ?? null,
    translation: row.translation === 'auto' || row.translation === 'never' ? row.translation : null,
    source: row.source,
  };
}

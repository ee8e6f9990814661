import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { LessThan, Repository } from 'typeorm';
import { LoadTaskEntity } from './load-task.entity';
import { LoadTaskRecord, LoadTaskStore } from './load-task-store';

const UPDATED_ON_SAVE = ['status', 'error', 'workers', 'updated_at', 'finished_at'];

@Injectable()
export class TypeOrmLoadTaskStore extends LoadTaskStore {
  constructor(@InjectRepository(LoadTaskEntity) private readonly repo: Repository<LoadTaskEntity>) {
    super();
  }

  /** Insert-or-update in one statement (ON CONFLICT). */
  async save(task: LoadTaskRecord): Promise<void> {
    await this.repo.manager.createQueryBuilder().insert().into(LoadTaskEntity).values(toRow(task)).orUpdate(UPDATED_ON_SAVE, ['id']).execute();
  }

  async get(id: string): Promise<LoadTaskRecord | undefined> {
    // No task id has one, and PostgreSQL refuses a NUL in a query: an unknown id, not a 500.
    if (id.includes('\u0000')) return undefined;
    const row = await this.repo.findOneBy({ id });
    return row ? toRecord(row) : undefined;
  }

  async unfinished(gatewayInstanceId: string): Promise<LoadTaskRecord[]> {
    const rows = await this.repo.find({ where: { status: 'loading', gatewayInstanceId }, order: { createdAt: 'ASC' } });
    return rows.map(toRecord);
  }

  async deleteUpdatedBefore(cutoff: number): Promise<number> {
    const result = await this.repo.delete({ updatedAt: LessThan(cutoff) });
    return result.affected ?? 0;
  }
}

function toRow(t: LoadTaskRecord): LoadTaskEntity {
  return {
    id: t.id,
    operation: 'model-load',
    modelId: t.modelId,
    status: t.status,
    error: t.error === undefined ? null : t.error.slice(0, 1024),
    options: t.options,
    workers: t.parts,
    gatewayInstanceId: t.gatewayInstanceId,
    createdAt: t.createdAt,
    updatedAt: t.updatedAt,
    finishedAt: t.finishedAt ?? null,
  };
}

function toRecord(row: LoadTaskEntity): LoadTaskRecord {
  return {
    id: row.id,
    modelId: row.modelId,
    status: row.status,
    ...(row.error !== null ? { error: row.error } : {}),
    options: row.options,
    parts: row.workers,
    gatewayInstanceId: row.gatewayInstanceId,
    createdAt: row.createdAt,
    updatedAt: row.updatedAt,
    ...(row.finishedAt !== null ? { finishedAt: row.finishedAt } : {}),
  };
}

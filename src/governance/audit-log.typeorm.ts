import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { Repository } from 'typeorm';
import { AuditEntryEntity } from './audit-entry.entity';
import { AuditEntry, AuditLog, AuditQuery, AuditRecord } from './audit-log';
import { LifecycleOperation } from './op-token';

@Injectable()
export class TypeOrmAuditLog extends AuditLog {
  constructor(@InjectRepository(AuditEntryEntity) private readonly repo: Repository<AuditEntryEntity>) {
    super();
  }

  async append(entry: AuditEntry): Promise<void> {
    const text = (v: string | null, max?: number) => (v === null ? null : storable(max === undefined ? v : v.slice(0, max)));
    await this.repo.insert({
      ...entry,
      modelId: text(entry.modelId),
      scope: text(entry.scope),
      nonce: text(entry.nonce),
      adminIdentity: text(entry.adminIdentity),
      errorCode: text(entry.errorCode),
      error: text(entry.error, 1024),
      taskId: text(entry.taskId),
    });
  }

  async list(query: AuditQuery): Promise<AuditRecord[]> {
    const q = this.repo.createQueryBuilder('a');
    if (query.operation) q.andWhere('a.operation = :operation', { operation: query.operation });
    if (query.outcome) q.andWhere('a.outcome = :outcome', { outcome: query.outcome });
    if (query.modelId) q.andWhere('a.modelId = :modelId', { modelId: query.modelId });
    if (query.taskId) q.andWhere('a.taskId = :taskId', { taskId: query.taskId });
    if (query.since !== undefined) q.andWhere('a.at >= :since', { since: query.since });
    if (query.until !== undefined) q.andWhere('a.at < :until', { until: query.until });
    if (query.before !== undefined) q.andWhere('a.id < :before', { before: query.before });
    const rows = await q.orderBy('a.id', 'DESC').limit(query.limit).getMany();
    return rows.map(toRecord);
  }
}

/**
 * PostgreSQL refuses a NUL character in text, and the whole row with it: a refused request whose
 * body named a model with one would go unaudited. JSON columns escape it; plain ones get U+FFFD.
 */
function storable(value: string): string {
  return value.includes('\u0000') ? value.replace(/\u0000/g, '\uFFFD') : value;
}

function toRecord(row: AuditEntryEntity): AuditRecord {
  return {
    id: row.id,
    at: row.at,
    operation: row.operation as LifecycleOperation,
    modelId: row.modelId,
    scope: row.scope,
    target: row.target,
    workers: row.workers,
    signers: row.signers,
    nonce: row.nonce,
    adminIdentity: row.adminIdentity,
    outcome: row.outcome,
    status: row.status,
    errorCode: row.errorCode,
    error: row.error,
    taskId: row.taskId,
  };
}

import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { Repository } from 'typeorm';
import { AuditEntryEntity } from './audit-entry.entity';
import { ADMIN_TOKEN_REFUSAL_CODES, AuditActor, AuditEntry, AuditLog, AuditQuery, AuditRecord, AuditRows } from './audit-log';
import { LifecycleOperation } from './op-token';

/** Rows per DELETE, and DELETEs per call: a large backlog never becomes one huge transaction. */
const DELETE_CHUNK = 10_000;
const MAX_CHUNKS = 50;

@Injectable()
export class TypeOrmAuditLog extends AuditLog {
  constructor(@InjectRepository(AuditEntryEntity) private readonly repo: Repository<AuditEntryEntity>) {
    super();
  }

  async append(entry: AuditEntry): Promise<void> {
    const text = (v: string | null, max?: number) => (v === null ? null : storable(max === undefined ? v : v.slice(0, max)));
    const { actor, summary, ...rest } = entry;
    await this.repo.insert({
      ...rest,
      action: text(entry.action ?? `lifecycle.${entry.operation}`, 64),
      actorKind: actor?.kind ?? null,
      actorSubject: text(actor?.subject ?? null, 255),
      actorName: text(actor?.name ?? null, 255),
      role: text(entry.role ?? null, 16),
      sourceAddress: text(entry.sourceAddress ?? null, 64),
      correlationId: text(entry.correlationId ?? null, 128),
      targetId: text(entry.targetId ?? null, 255),
      // simple-json: TypeORM's insert type does not follow an object column; it is stored as JSON text.
      summary: (summary ?? null) as never,
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
    if (query.actor) q.andWhere('a.actorSubject = :actor', { actor: query.actor });
    if (query.action) q.andWhere('a.action = :action', { action: query.action });
    if (query.targetId) q.andWhere('a.targetId = :targetId', { targetId: query.targetId });
    if (query.since !== undefined) q.andWhere('a.at >= :since', { since: query.since });
    if (query.until !== undefined) q.andWhere('a.at < :until', { until: query.until });
    if (query.before !== undefined) q.andWhere('a.id < :before', { before: query.before });
    const rows = await q.orderBy('a.id', 'DESC').limit(query.limit).getMany();
    return rows.map(toRecord);
  }

  /** Chunk by chunk, at most MAX_CHUNKS of them (the next sweep goes on). */
  async deleteBefore(cutoff: number, rows: AuditRows): Promise<number> {
    let total = 0;
    for (let chunk = 0; chunk < MAX_CHUNKS; chunk++) {
      // DELETE … WHERE id IN (SELECT id … LIMIT n): portable, unlike DELETE … LIMIT.
      const old = this.repo.createQueryBuilder('old').select('old.id').where('old.at < :cutoff');
      if (rows === 'unauthenticated') old.andWhere("old.outcome = 'refused' AND old.errorCode IN (:...codes)");
      const result = await this.repo
        .createQueryBuilder()
        .delete()
        .from(AuditEntryEntity)
        .where(`id IN (${old.limit(DELETE_CHUNK).getQuery()})`)
        .setParameters({ cutoff, codes: ADMIN_TOKEN_REFUSAL_CODES })
        .execute();
      const deleted = result.affected ?? 0;
      total += deleted;
      if (deleted < DELETE_CHUNK) break;
    }
    return total;
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
    action: row.action ?? `lifecycle.${row.operation}`,
    actor:
      row.actorKind === null
        ? null
        : ({ kind: row.actorKind, subject: row.actorSubject ?? '', ...(row.actorName ? { name: row.actorName } : {}) } as AuditActor),
    role: row.role,
    sourceAddress: row.sourceAddress,
    correlationId: row.correlationId,
    targetId: row.targetId,
    summary: row.summary,
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

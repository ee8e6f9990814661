import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { Repository } from 'typeorm';
import { UsageGroupBy, UsageQuery } from './usage-query';
import { UsageRecordEntity } from './usage-record.entity';

/** Chargeback totals of one group (or of everything matching, without grouping). */
export interface UsageTotals {
  /** The group's value: a tenant, key id, served model or UTC day; null for rows without one. */
  group?: string | null;
  requests: number;
  /** Requests that ended with an HTTP status >= 400 (the backend's or the gateway's) or a gateway error. */
  errors: number;
  promptTokens: number;
  completionTokens: number;
  totalTokens: number;
  /** Seconds requests held worker slots (placement to completion). */
  workerSeconds: number;
  /** GPU seconds: each slot's time as its share of the worker's GPUs (worker_ms / max_concurrent × gpus_per_worker). */
  gpuSeconds: number;
  /** Sum of the priced records' cost; null when no record of the group was priced. */
  cost: number | null;
}

/** The entity property each grouping reads. `model` is the served model: the one that did the work. */
const GROUP_COLUMN: Record<UsageGroupBy, keyof UsageRecordEntity> = {
  tenant: 'tenant',
  key: 'keyId',
  model: 'servedModel',
  pool: 'provider',
  day: 'day',
};

interface RawTotals {
  group_key?: string | null;
  requests: string | number;
  errors: string | number | null;
  prompt_tokens: string | number | null;
  completion_tokens: string | number | null;
  worker_ms: string | number | null;
  gpu_ms: string | number | null;
  cost: string | number | null;
}

/**
 * Usage totals computed by the database: one SELECT … GROUP BY in SQL both SQLite and PostgreSQL
 * run unchanged (the day is a stored column, not a date function). Records still buffered in
 * memory (up to one USAGE_FLUSH_INTERVAL_SECS) are not counted yet.
 */
@Injectable()
export class UsageAggregates {
  constructor(@InjectRepository(UsageRecordEntity) private readonly repo: Repository<UsageRecordEntity>) {}

  async totals(query: UsageQuery): Promise<UsageTotals[]> {
    const qb = this.repo
      .createQueryBuilder('u')
      .select('COUNT(*)', 'requests')
      .addSelect('COALESCE(SUM(CASE WHEN u.status >= 400 OR u.errorCode IS NOT NULL THEN 1 ELSE 0 END), 0)', 'errors')
      .addSelect('COALESCE(SUM(u.promptTokens), 0)', 'prompt_tokens')
      .addSelect('COALESCE(SUM(u.completionTokens), 0)', 'completion_tokens')
      .addSelect('COALESCE(SUM(u.workerMs), 0)', 'worker_ms')
      .addSelect('COALESCE(SUM(u.gpuMs), 0)', 'gpu_ms')
      .addSelect('SUM(u.cost)', 'cost');
    if (query.tenant !== undefined) qb.andWhere('u.tenant = :tenant', { tenant: query.tenant });
    if (query.keyId !== undefined) qb.andWhere('u.keyId = :keyId', { keyId: query.keyId });
    if (query.since !== undefined) qb.andWhere('u.receivedAt >= :since', { since: query.since });
    if (query.until !== undefined) qb.andWhere('u.receivedAt < :until', { until: query.until });
    if (query.groupBy) {
      const column = `u.${GROUP_COLUMN[query.groupBy]}`;
      qb.addSelect(column, 'group_key').groupBy(column);
    }
    const rows = await qb.getRawMany<RawTotals>();
    const totals = rows.map((r) => toTotals(r, query.groupBy !== undefined));
    // Sorted here: SQLite and PostgreSQL disagree on where NULL sorts.
    if (query.groupBy) totals.sort((a, b) => compareGroups(a.group ?? null, b.group ?? null));
    return totals;
  }
}

function toTotals(r: RawTotals, grouped: boolean): UsageTotals {
  // PostgreSQL returns COUNT and SUM as strings (bigint / numeric).
  const promptTokens = Number(r.prompt_tokens ?? 0);
  const completionTokens = Number(r.completion_tokens ?? 0);
  const totals: UsageTotals = {
    requests: Number(r.requests),
    errors: Number(r.errors ?? 0),
    promptTokens,
    completionTokens,
    totalTokens: promptTokens + completionTokens,
    workerSeconds: Number(r.worker_ms ?? 0) / 1000,
    gpuSeconds: Number(r.gpu_ms ?? 0) / 1000,
    cost: r.cost === null || r.cost === undefined ? null : Number(r.cost),
  };
  if (grouped) totals.group = r.group_key ?? null;
  return totals;
}

function compareGroups(a: string | null, b: string | null): number {
  if (a === b) return 0;
  if (a === null) return 1;
  if (b === null) return -1;
  return a < b ? -1 : 1;
}

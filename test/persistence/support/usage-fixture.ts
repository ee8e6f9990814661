import { Logger } from '@nestjs/common';
import { DataSource, Repository } from 'typeorm';
import { AppConfig } from '../../../src/config';
import { UsageConfig } from '../../../src/config/sections/usage';
import { UsageRecord, utcDay } from '../../../src/usage/usage-record';
import { UsageRecordEntity } from '../../../src/usage/usage-record.entity';
import { FakeClock } from '../../support/fake-clock';
import { RecordingLogger } from './recording-logger';
import { createTestDatabase, TestDatabase, testConfig } from './test-database';

// Shared setup of usage-records.e2e-spec.ts and usage-aggregates.e2e-spec.ts: a migrated database with
// the usage_records table, emptied before each test, and finished requests to store in it.

export const FLUSH_MS = 5_000;
export const DAY_MS = 86_400_000;

export interface UsageDatabase {
  db: TestDatabase;
  ds: DataSource;
  repo: Repository<UsageRecordEntity>;
}

export async function openUsageDatabase(sql: RecordingLogger): Promise<UsageDatabase> {
  const db = await createTestDatabase('usage_records');
  const ds = await db.connect(sql);
  await ds.runMigrations();
  const repo = ds.getRepository(UsageRecordEntity);
  Logger.overrideLogger(['error']);
  return { db, ds, repo };
}

export async function closeUsageDatabase(db: TestDatabase): Promise<void> {
  await db.dispose();
  Logger.overrideLogger(['log', 'error', 'warn']);
}

/** Empties the table and the recorded SQL; returns the test's fresh clock. */
export async function resetUsageRecords(repo: Repository<UsageRecordEntity>, sql: RecordingLogger): Promise<FakeClock> {
  await repo.clear();
  const clock = new FakeClock();
  sql.clear();
  return clock;
}

export function usageTestConfig(db: TestDatabase, usage: Partial<UsageConfig> = {}): AppConfig {
  const base = testConfig(db.url);
  return { ...base, usage: { ...base.usage, flushIntervalMs: FLUSH_MS, batchSize: 100, bufferSize: 1000, ...usage } };
}

/** A finished request as the dispatcher describes it; `n` makes ids and values distinct. */
export function usageRecord(clock: FakeClock, n: number, overrides: Partial<UsageRecord> = {}): UsageRecord {
  const receivedAt = overrides.receivedAt ?? clock.now() - 1000;
  return {
    id: `r-${n}`,
    receivedAt,
    day: utcDay(receivedAt),
    tenant: 'team-a',
    keyId: null,
    requestedModel: 'gpt-4',
    servedModel: 'llama-3-70b',
    provider: 'gpu',
    workerId: 'w-1',
    workerName: 'gpu-box-1',
    endpoint: '/v1/chat/completions',
    status: 200,
    errorCode: null,
    promptTokens: 10,
    completionTokens: 20,
    queueWaitMs: 5,
    ttfbMs: 100,
    durationMs: 900,
    workerMs: 800,
    backendMs: null,
    gpuMs: 200,
    cost: null,
    ...overrides,
  };
}

/** The stored records' ids, in the order of their numbers. */
export async function recordIds(repo: Repository<UsageRecordEntity>): Promise<string[]> {
  return (await repo.find({ select: { id: true } })).map((r) => r.id).sort((a, b) => Number(a.slice(2)) - Number(b.slice(2)));
}

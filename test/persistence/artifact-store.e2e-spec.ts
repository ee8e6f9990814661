import { Logger } from '@nestjs/common';
import { DataSource, EntityTarget, ObjectLiteral } from 'typeorm';
import { AppConfig } from '../../src/config';
import { ArtifactMetrics } from '../../src/artifacts/artifact-metrics';
import { ArtifactIdentity, ArtifactRecord, ArtifactWrite, newRecord } from '../../src/artifacts/artifact-record';
import { ArtifactRetention } from '../../src/artifacts/artifact-retention.service';
import { ArtifactEntity } from '../../src/artifacts/artifact.entity';
import { ArtifactTagEntity } from '../../src/artifacts/artifact-tag.entity';
import { ArtifactTranscriptEntity } from '../../src/artifacts/artifact-transcript.entity';
import { ArtifactsConfig } from '../../src/config/sections/artifacts';
import { TypeOrmArtifactStore } from '../../src/artifacts/artifact-store.typeorm';
import { JobArtifactRecorder, MAX_WRITE_ATTEMPTS } from '../../src/artifacts/job-artifact-recorder.service';
import { JobArtifactInput } from '../../src/artifacts/job-artifacts.port';
import { MetricsService } from '../../src/observability/metrics.service';
import { parsePrometheusText } from '../observability/prometheus-text';
import { FakeClock } from '../support/fake-clock';
import { RecordingLogger } from './support/recording-logger';
import { createTestDatabase, TestDatabase, testConfig } from './support/test-database';

const DAY_MS = 86_400_000;
const FLUSH_MS = 1_000;

describe('artifact store', () => {
  let db: TestDatabase;
  let ds: DataSource;
  let store: TypeOrmArtifactStore;
  const sql = new RecordingLogger();

  beforeAll(async () => {
    db = await createTestDatabase('artifacts');
    ds = await db.connect(sql);
    await ds.runMigrations();
    store = new TypeOrmArtifactStore(ds.getRepository(ArtifactEntity));
    Logger.overrideLogger(['error']);
  });

  afterAll(async () => {
    await db.dispose();
    Logger.overrideLogger(['log', 'error', 'warn']);
  });

  beforeEach(async () => {
    for (const entity of [ArtifactTagEntity, ArtifactTranscriptEntity, ArtifactEntity]) await ds.getRepository(entity).clear();
    sql.clear();
  });

  const count = (entity: EntityTarget<ObjectLiteral>) => ds.getRepository(entity).count();

  function artifact(
    n: number,
    overrides: Partial<ArtifactIdentity> = {},
    extra: Partial<{ tenant: string; createdAt: number; jobId: string | null }> = {},
  ): ArtifactRecord {
    return newRecord(
      { kind: 'plan', sessionId: 'sess-1', tags: ['t'], parents: [], metadata: { n }, content: { step: n, text: 'ünïcødé ✓' }, ...overrides },
      { tenant: 'team-a', jobId: null, createdAt: 1_700_000_000_000 + n, ...extra },
    );
  }

  describe('TypeOrmArtifactStore', () => {
    it('stores an artifact with its tags and reads it back exactly, 64-bit times included', async () => {
      const a = artifact(
        1,
        { tags: ['x', 'y'], parents: ['f'.repeat(64)], metadata: { deep: { list: [1, null, 'z'] } } },
        { createdAt: Date.UTC(2026, 0, 1, 0, 0, 0, 999) },
      );
      expect(await store.save({ record: a })).toBe(true);
      expect(await store.find('team-a', a.id)).toEqual(a);
      expect(await count(ArtifactTagEntity)).toBe(2);
      const [row] = await ds.query('SELECT content FROM artifacts');
      expect(row.content).toBe('{"step":1,"text":"ünïcødé ✓"}');
    });

    it('storing the same artifact again changes nothing and says so', async () => {
      const a = artifact(1);
      expect(await store.save({ record: a })).toBe(true);
      const again = { ...a, createdAt: a.createdAt + 5000 };
      expect(await store.save({ record: again })).toBe(false);
      expect(await count(ArtifactEntity)).toBe(1);
      expect(await count(ArtifactTagEntity)).toBe(1);
      expect((await store.find('team-a', a.id))!.createdAt).toBe(a.createdAt);
    });

    it('keeps tenants apart: the same id in two tenants is two artifacts, and one cannot read the other', async () => {
      const a = artifact(1);
      const b = artifact(1, {}, { tenant: 'team-b' });
      expect(a.id).toBe(b.id);
      expect(await store.save({ record: a })).toBe(true);
      expect(await store.find('team-b', a.id)).toBeNull();
      expect(await store.save({ record: b })).toBe(true);
      expect(await count(ArtifactEntity)).toBe(2);
      expect(await store.existing('team-c', [a.id])).toEqual(new Set());
    });

    it('keeps a separate transcript beside the artifact', async () => {
      const text = `id: 1\ndata: {"t":"${'x'.repeat(100_000)}"}\n\n`;
      const a = artifact(1, { kind: 'job' });
      await store.save({ record: a, transcript: { text } });
      expect(await store.findTranscript('team-a', a.id)).toBe(text);
      expect(await store.findTranscript('team-b', a.id)).toBeNull();
      expect(await store.findTranscript('team-a', artifact(2).id)).toBeNull();
    });

    it('saveMany writes a batch in one transaction and skips what exists', async () => {
      const first = artifact(1);
      await store.save({ record: first });
      const batch: ArtifactWrite[] = [first, artifact(2), artifact(3, { kind: 'job' })].map((record) => ({ record }));
      batch[2].transcript = { text: 'data: {}\n\n' };
      sql.clear();
      await store.saveMany(batch);
      expect(sql.writesTo('artifacts')).toHaveLength(1);
      expect(await count(ArtifactEntity)).toBe(3);
      expect(await count(ArtifactTranscriptEntity)).toBe(1);
      expect(await store.existing('team-a', [first.id, batch[1].record.id, 'a'.repeat(64)])).toEqual(new Set([first.id, batch[1].record.id]));
    });

    it('lists newest first without content, filtered by session, kind and exact tag, within the tenant', async () => {
      const rows = [
        artifact(1, { tags: ['alpha'] }),
        artifact(2, { tags: ['alpha', 'beta'], sessionId: 'sess-2' }),
        artifact(3, { tags: ['alphabet'], kind: 'summary' }),
        artifact(4, { tags: ['alpha'] }, { tenant: 'team-b' }),
        artifact(5, { tags: ['al%'], sessionId: null }),
      ];
      for (const record of rows) await store.save({ record });
      const ids = async (q: Partial<Parameters<TypeOrmArtifactStore['list']>[0]> = {}) =>
        (await store.list({ tenant: 'team-a', limit: 10, ...q })).map((a) => a.metadata.n);

      expect(await ids()).toEqual([5, 3, 2, 1]);
      expect(await ids({ tag: 'alpha' })).toEqual([2, 1]);
      expect(await ids({ tag: 'al%' })).toEqual([5]);
      expect(await ids({ tag: 'al' })).toEqual([]);
      expect(await ids({ sessionId: 'sess-1' })).toEqual([3, 1]);
      expect(await ids({ kind: 'summary' })).toEqual([3]);
      expect(await ids({ tag: 'alpha', sessionId: 'sess-2', kind: 'plan' })).toEqual([2]);
      expect(await ids({ tenant: 'team-b' })).toEqual([4]);
      const [listed] = await store.list({ tenant: 'team-a', limit: 1 });
      const { content, ...summary } = rows[4];
      expect(content).toBeDefined();
      expect(listed).toEqual(summary);
    });

    it('pages by position: no artifact twice or missed, ties in time ordered by id', async () => {
      const rows = Array.from({ length: 7 }, (_, i) => artifact(i, {}, { createdAt: 1000 + Math.floor(i / 3) }));
      for (const record of rows) await store.save({ record });
      const seen: string[] = [];
      let after: { createdAt: number; id: string } | undefined;
      for (;;) {
        const page = await store.list({ tenant: 'team-a', limit: 2, after });
        seen.push(...page.map((a) => a.id));
        if (page.length < 2) break;
        after = page[page.length - 1];
      }
      const expected = [...rows].sort((a, b) => b.createdAt - a.createdAt || (a.id < b.id ? 1 : -1)).map((a) => a.id);
      expect(seen).toEqual(expected);
    });

    it('deletes artifacts created before a cutoff with their tags and transcripts, chunk by chunk, ties included', async () => {
      class SmallChunks extends TypeOrmArtifactStore {
        protected override readonly chunkSize = 2;
      }
      const small = new SmallChunks(ds.getRepository(ArtifactEntity));
      // Five old artifacts, three of them created at the same instant, and two recent ones.
      const times = [100, 200, 200, 200, 300, 5000, 6000];
      for (const [i, createdAt] of times.entries()) {
        await small.save({ record: artifact(i, { kind: 'job', tags: ['a', 'b'] }, { createdAt }), transcript: { text: `data: ${i}\n\n` } });
      }
      expect(await small.deleteCreatedBefore(1000)).toBe(5);
      expect((await small.list({ tenant: 'team-a', limit: 10 })).map((a) => a.createdAt)).toEqual([6000, 5000]);
      expect(await count(ArtifactTagEntity)).toBe(4);
      expect(await count(ArtifactTranscriptEntity)).toBe(2);
      expect(await small.deleteCreatedBefore(1000)).toBe(0);
    });
  });

  describe('ArtifactRetention', () => {
    function retention(days: number): ArtifactRetention {
      const base = testConfig(db.url);
      return new ArtifactRetention(store, { ...base, artifacts: { ...base.artifacts, retentionMs: days * DAY_MS } });
    }

    it('prunes what outlived the retention; 0 days keeps everything', async () => {
      const now = Date.UTC(2026, 5, 1);
      await store.save({ record: artifact(1, {}, { createdAt: now - 31 * DAY_MS }) });
      await store.save({ record: artifact(2, {}, { createdAt: now - 29 * DAY_MS }) });
      expect(await retention(0).prune(now)).toBe(0);
      expect(await count(ArtifactEntity)).toBe(2);
      expect(await retention(30).prune(now)).toBe(1);
      expect((await store.list({ tenant: 'team-a', limit: 10 })).map((a) => a.metadata.n)).toEqual([2]);
    });
  });

  describe('JobArtifactRecorder (write-behind)', () => {
    let clock: FakeClock;
    let metrics: MetricsService;
    let artifactMetrics: ArtifactMetrics;
    let recorder: JobArtifactRecorder;

    function config(artifacts: Partial<ArtifactsConfig> = {}): AppConfig {
      const base = testConfig(db.url);
      return { ...base, artifacts: { ...base.artifacts, flushIntervalMs: FLUSH_MS, inlineTranscriptBytes: 512, ...artifacts } };
    }

    function start(s: TypeOrmArtifactStore = store, c: AppConfig = config()): JobArtifactRecorder {
      const r = new JobArtifactRecorder(s, clock, c, artifactMetrics);
      r.onModuleInit();
      return r;
    }

    function job(n: number, overrides: Partial<JobArtifactInput> = {}): JobArtifactInput {
      return {
        jobId: `task-${n}`,
        sessionId: 'sess-1',
        tenant: 'team-a',
        params: { model: 'm', max_tokens: 8, prompt: 'CANARY' },
        modelRef: 'm',
        status: 'completed',
        tokensOut: 2,
        decodeTimeMs: 10,
        transcript: `id: 1\nevent: token\ndata: {"t":"hi","i":0}\n\n`,
        createdAt: clock.now(),
        ...overrides,
      };
    }

    async function settleWrites(): Promise<void> {
      for (let i = 0; i < 10; i++) {
        clock.advance(0);
        await recorder.whenIdle();
        await new Promise((resolve) => setImmediate(resolve));
      }
    }

    async function metricValue(family: string, labels: Record<string, string> = {}): Promise<number | undefined> {
      const f = parsePrometheusText(await metrics.registry.metrics()).get(family);
      return f?.samples.find((s) => Object.entries(labels).every(([k, v]) => s.labels[k] === v))?.value;
    }

    beforeEach(() => {
      clock = new FakeClock();
      metrics = new MetricsService();
      artifactMetrics = new ArtifactMetrics(metrics);
      recorder = start();
    });

    afterEach(async () => {
      await recorder.close();
    });

    it('answers the id at once, readable from memory, and writes nothing before the flush period', async () => {
      const ids = [1, 2, 3].map((n) => recorder.recordJob(job(n)));
      expect(ids.every((id) => /^[0-9a-f]{64}$/.test(id))).toBe(true);
      expect(recorder.pending('team-a', ids[0])?.record.jobId).toBe('task-1');
      expect(recorder.pending('team-b', ids[0])).toBeUndefined();
      clock.advance(FLUSH_MS - 1);
      await settleWrites();
      expect(sql.writesTo('artifacts')).toEqual([]);
      expect(await count(ArtifactEntity)).toBe(0);
    });

    it('writes the artifacts of many tasks in one statement per flush, and forgets them from memory', async () => {
      const ids = Array.from({ length: 7 }, (_, n) => recorder.recordJob(job(n)));
      clock.advance(FLUSH_MS);
      await settleWrites();
      expect(sql.writesTo('artifacts')).toHaveLength(1);
      expect(await count(ArtifactEntity)).toBe(7);
      expect(recorder.buffered).toBe(0);
      expect(recorder.pending('team-a', ids[0])).toBeUndefined();
      const stored = await store.find('team-a', ids[3]);
      expect(stored).toMatchObject({ kind: 'job', jobId: 'task-3', sessionId: 'sess-1' });
      expect(JSON.stringify(stored)).not.toContain('CANARY');
      expect(await metricValue('switchboard_artifacts_written_total')).toBe(7);
    });

    it('records a failure with its error context, and a large transcript separately', async () => {
      const transcript = Array.from({ length: 50 }, (_, i) => `id: ${i}\nevent: token\ndata: {"t":"w${i}","i":${i}}\n\n`).join('');
      const id = recorder.recordJob(
        job(1, { status: 'failed', transcript, error: { code: 'worker_error', message: 'The worker failed to process the request', retriable: true } }),
      );
      await recorder.flush();
      const stored = await store.find('team-a', id);
      expect(stored!.content).toMatchObject({
        status: 'failed',
        error: { code: 'worker_error', retriable: true },
        transcript: { storage: 'separate', bytes: Buffer.byteLength(transcript) },
      });
      expect(await store.findTranscript('team-a', id)).toBe(transcript);
    });

    it('the same artifact recorded twice is written once', async () => {
      const input = job(1);
      expect(recorder.recordJob(input)).toBe(recorder.recordJob({ ...input }));
      await recorder.flush();
      expect(recorder.recordJob({ ...input })).toBeTruthy();
      await recorder.flush();
      expect(await count(ArtifactEntity)).toBe(1);
    });

    it('is bounded in bytes: while the database hangs, the oldest waiting artifacts are dropped and counted', async () => {
      let release!: () => void;
      const gate = new Promise<void>((resolve) => (release = resolve));
      class HangingStore extends TypeOrmArtifactStore {
        override async saveMany(writes: ArtifactWrite[]): Promise<void> {
          await gate;
          return super.saveMany(writes);
        }
      }
      await recorder.close();
      const transcript = `data: ${'x'.repeat(2000)}\n\n`;
      recorder = start(new HangingStore(ds.getRepository(ArtifactEntity)), config({ bufferBytes: 20_000, maxTranscriptBytes: 4096 }));
      const first = recorder.recordJob(job(0, { transcript }));
      clock.advance(FLUSH_MS); // the first artifact is being written; the database hangs
      const later = Array.from({ length: 12 }, (_, n) => recorder.recordJob(job(n + 1, { transcript })));
      const kept = later.filter((id) => recorder.pending('team-a', id));
      expect(kept.length).toBeLessThan(later.length);
      expect(kept).toEqual(later.slice(later.length - kept.length)); // the newest stay
      expect(recorder.pending('team-a', first)).toBeDefined(); // the batch in flight is never dropped
      expect(await metricValue('switchboard_artifacts_dropped_total', { reason: 'buffer_full' })).toBe(later.length - kept.length);
      release();
      await recorder.flush();
      expect(await count(ArtifactEntity)).toBe(1 + kept.length);
    });

    it(`retries a failed batch on the next periods, and drops it after ${MAX_WRITE_ATTEMPTS} failures`, async () => {
      let failures = 0;
      class FailingStore extends TypeOrmArtifactStore {
        override async saveMany(): Promise<void> {
          failures++;
          throw new Error('database unavailable');
        }
      }
      await recorder.close();
      recorder = start(new FailingStore(ds.getRepository(ArtifactEntity)));
      const id = recorder.recordJob(job(1));
      for (let i = 0; i < MAX_WRITE_ATTEMPTS + 2; i++) {
        clock.advance(FLUSH_MS);
        await settleWrites();
      }
      expect(failures).toBe(MAX_WRITE_ATTEMPTS);
      expect(recorder.pending('team-a', id)).toBeUndefined();
      expect(await metricValue('switchboard_artifacts_dropped_total', { reason: 'write_failed' })).toBe(1);
    });

    it('writes what is buffered at shutdown, and records nothing afterwards', async () => {
      const id = recorder.recordJob(job(1));
      await recorder.beforeApplicationShutdown();
      expect(await store.find('team-a', id)).not.toBeNull();
      const late = recorder.recordJob(job(2));
      expect(recorder.pending('team-a', late)).toBeUndefined();
      expect(await count(ArtifactEntity)).toBe(1);
    });
  });
});

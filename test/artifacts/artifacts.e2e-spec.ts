import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DataSource } from 'typeorm';
import { JobArtifactRecorder } from '../../src/artifacts/job-artifact-recorder.service';
import { JOB_ARTIFACTS, JobArtifactInput, JobArtifacts } from '../../src/artifacts/job-artifacts.port';
import { createDataSource } from '../../src/database/data-source-options';
import { createKey } from '../api-keys/support';
import { parsePrometheusText } from '../observability/prometheus-text';
import { startGateway, TestGateway } from '../support/gateway';
import { get as getRaw, post, RawResponse } from '../support/http';

/** A phrase that only ever appears in prompts: it must never reach the database. */
const CANARY = 'CANARY-prompt-51c0-do-not-store';
const MAX_BYTES = 4096;
const INLINE_TRANSCRIPT_BYTES = 1024;

/** The id as docs/artifacts.md defines it, computed here independently of the gateway's code. */
function expectedId(body: { kind: string; content: unknown; session_id?: string; tags?: string[]; parents?: string[]; metadata?: object }): string {
  const canonical = (v: unknown): string =>
    Array.isArray(v)
      ? `[${v.map(canonical).join(',')}]`
      : v && typeof v === 'object'
        ? `{${Object.keys(v)
            .sort()
            .map((k) => `${JSON.stringify(k)}:${canonical((v as Record<string, unknown>)[k])}`)
            .join(',')}}`
        : JSON.stringify(v);
  const record = {
    content: body.content,
    kind: body.kind,
    metadata: body.metadata ?? {},
    parents: [...new Set(body.parents ?? [])].sort(),
    session_id: body.session_id ?? null,
    tags: [...new Set(body.tags ?? [])].sort(),
  };
  return createHash('sha256').update(canonical(record)).digest('hex');
}

describe('artifacts: /v1/artifacts and the JOB_ARTIFACTS port on the real gateway', () => {
  let gw: TestGateway;
  let keyA: string;
  let keyA2: string;
  let keyB: string;
  let jobs: JobArtifacts;
  let recorder: JobArtifactRecorder;

  const auth = (key: string) => ({ authorization: `Bearer ${key}` });
  const create = (body: unknown, key = keyA, headers: Record<string, string> = {}) => post(gw.url, '/v1/artifacts', body, { ...auth(key), ...headers });
  const get = (path: string, key = keyA): Promise<RawResponse> => getRaw(gw.url, path, auth(key));

  function job(overrides: Partial<JobArtifactInput> = {}): JobArtifactInput {
    return {
      jobId: `task-${Math.random().toString(36).slice(2, 10)}`,
      sessionId: 'sess-jobs',
      tenant: 'team-a',
      params: { model: 'llama3:8b', max_tokens: 16, temperature: 0.1, messages: [{ role: 'user', content: CANARY }] },
      maxTokens: 16,
      ctx: 8192,
      engine: 'vllm',
      engineVersion: '0.6.3',
      modelRef: 'llama3:8b',
      pool: 'local',
      seed: 42,
      outputMode: 'json',
      status: 'completed',
      tokensOut: 2,
      decodeTimeMs: 120,
      transcript:
        'id: 1\nevent: started\ndata: {"queue_position":0,"predicted_start_ms":0}\n\nid: 2\nevent: token\ndata: {"t":"{}","i":0}\n\nid: 3\nevent: end\ndata: {"tokens_out":2,"decode_time_ms":120,"decode_ms":120}\n\n',
      createdAt: Date.now(),
      ...overrides,
    };
  }

  beforeAll(async () => {
    gw = await startGateway({
      REQUIRE_API_KEYS: 'true',
      ARTIFACTS_MAX_BYTES: String(MAX_BYTES),
      ARTIFACTS_INLINE_TRANSCRIPT_BYTES: String(INLINE_TRANSCRIPT_BYTES),
      ARTIFACTS_MAX_TRANSCRIPT_BYTES: '8192',
      // Job artifacts are written when a test flushes (or at shutdown), not on a timer.
      ARTIFACTS_FLUSH_INTERVAL_SECS: '3600',
    });
    keyA = (await createKey(gw, { name: 'a', tenant: 'team-a' })).key;
    keyA2 = (await createKey(gw, { name: 'a2', tenant: 'team-a' })).key;
    keyB = (await createKey(gw, { name: 'b', tenant: 'team-b' })).key;
    jobs = gw.app.get<JobArtifacts>(JOB_ARTIFACTS);
    recorder = gw.app.get(JobArtifactRecorder);
  });
  afterAll(() => gw.close());

  const PLAN = {
    kind: 'plan',
    session_id: 'sess-1',
    tags: ['v1', 'agent:planner'],
    metadata: { title: 'Refactor' },
    content: { steps: ['split', 'test'], owner: 'ada' },
  };

  it('POST stores an artifact under its content address (201) and GET returns it with its metadata', async () => {
    const created = await create(PLAN);
    expect(created.status).toBe(201);
    expect(created.json).toEqual({
      object: 'artifact',
      id: expectedId(PLAN),
      kind: 'plan',
      session_id: 'sess-1',
      job_id: null,
      tags: ['agent:planner', 'v1'],
      parents: [],
      metadata: { title: 'Refactor' },
      size: Buffer.byteLength('{"owner":"ada","steps":["split","test"]}'),
      created_at: expect.stringMatching(/^\d{4}-\d{2}-\d{2}T/),
      transcript_url: null,
    });
    const read = await get(`/v1/artifacts/${created.json.id}`);
    expect(read.status).toBe(200);
    expect(read.json).toEqual({ ...created.json, content: PLAN.content });
    // Another key of the same tenant sees it too.
    expect((await get(`/v1/artifacts/${created.json.id}`, keyA2)).status).toBe(200);
  });

  it('posting the same artifact again (keys, tags in another order) answers 200 with the stored one and changes nothing', async () => {
    const first = await create({ ...PLAN, metadata: { title: 'Again' } });
    expect(first.status).toBe(201);
    const again = await post(
      gw.url,
      '/v1/artifacts',
      `{"content":{"owner":"ada","steps":["split","test"]},"tags":["agent:planner","v1","v1"],"metadata":{"title":"Again"},"session_id":"sess-1","kind":"plan"}`,
      auth(keyA),
    );
    expect(again.status).toBe(200);
    expect(again.json).toEqual(first.json);
    const listed = await get('/v1/artifacts?session_id=sess-1&kind=plan');
    expect(listed.json.data.filter((a: { id: string }) => a.id === first.json.id)).toHaveLength(1);
  });

  it('keeps tenants apart: another tenant gets 404 and its own copy, a key cannot claim another tenant, no key is 401', async () => {
    const mine = await create({ kind: 'summary', content: 'team-a only', tags: ['private'] });
    expect(mine.status).toBe(201);
    expect((await get(`/v1/artifacts/${mine.json.id}`, keyB)).json).toMatchObject({ error: { code: 'not_found', type: 'invalid_request_error' } });
    expect((await get(`/v1/artifacts/${mine.json.id}`, keyB)).status).toBe(404);
    expect((await get('/v1/artifacts?tag=private', keyB)).json.data).toEqual([]);
    // The same content in team-b is team-b's artifact: same id, stored anew.
    const theirs = await create({ kind: 'summary', content: 'team-a only', tags: ['private'] }, keyB);
    expect(theirs.status).toBe(201);
    expect(theirs.json.id).toBe(mine.json.id);
    expect((await create({ kind: 'summary', content: 'x' }, keyA, { 'x-tenant-id': 'team-b' })).json.error.code).toBe('tenant_mismatch');
    const anonymous = await fetch(`${gw.url}/v1/artifacts`);
    expect(anonymous.status).toBe(401);
    // A parent of another tenant is unknown here.
    const child = await create({ kind: 'diff', content: 'd', parents: [mine.json.id] }, keyB);
    expect(child.status).toBe(201);
    const stranger = await create({ kind: 'diff', content: 'd', parents: [(await create({ kind: 'note', content: 'only a' })).json.id] }, keyB);
    expect(stranger.status).toBe(400);
  });

  it(`refuses a body above artifacts.max_bytes (${MAX_BYTES}) with 413 payload_too_large, in the OpenAI dialect`, async () => {
    const res = await create({ kind: 'trace', content: 'x'.repeat(MAX_BYTES) });
    expect(res.status).toBe(413);
    expect(res.json).toEqual({
      error: {
        message: `Request body exceeds ${MAX_BYTES} bytes`,
        type: 'invalid_request_error',
        code: 'payload_too_large',
        param: null,
        kind: 'INVALID_PARAMS',
        retriable: false,
      },
    });
  });

  it('answers malformed bodies with 400 naming the field, and unknown parents with 400 naming the parent', async () => {
    const notJson = await post(gw.url, '/v1/artifacts', '{"kind": "plan",', auth(keyA));
    expect([notJson.status, notJson.json.error.code]).toEqual([400, 'invalid_request']);
    const cases: Array<[unknown, string]> = [
      [{ content: 1 }, 'kind'],
      [{ kind: 'job', content: 1 }, 'kind'],
      [{ kind: 'plan' }, 'content'],
      [{ kind: 'plan', content: 1, tags: ['ok', 'not ok'] }, 'tags[1]'],
      [{ kind: 'plan', content: 1, parents: ['nope'] }, 'parents[0]'],
      [{ kind: 'plan', content: 1, session_id: '' }, 'session_id'],
      [{ kind: 'plan', content: 1, metadata: 'm' }, 'metadata'],
      [{ kind: 'plan', content: 1, extra: true }, 'extra'],
    ];
    for (const [body, param] of cases) {
      const res = await create(body);
      expect([param, res.status, res.json.error.code, res.json.error.param, res.json.error.kind]).toEqual([
        param,
        400,
        'invalid_params',
        param,
        'INVALID_PARAMS',
      ]);
    }
    const parent = (await create({ kind: 'plan', content: 'parent' })).json.id;
    const unknown = 'ab'.repeat(32);
    const refused = await create({ kind: 'diff', content: 'child', parents: [parent, unknown] });
    expect([refused.status, refused.json.error.param, refused.json.error.message]).toEqual([400, 'parents[1]', `Unknown parent artifact '${unknown}'`]);
    const child = await create({ kind: 'diff', content: 'child', parents: [parent] });
    expect([child.status, child.json.parents]).toEqual([201, [parent]]);
  });

  it('lists newest first, metadata only, filtered by session, exact tag and kind, page by page', async () => {
    const made: Array<{ id: string; created_at: string }> = [];
    for (let i = 0; i < 5; i++) {
      const res = await create({ kind: i % 2 ? 'trace' : 'summary', session_id: 'sess-list', tags: i < 3 ? ['early', `n${i}`] : [`n${i}`], content: { i } });
      expect(res.status).toBe(201);
      made.push(res.json);
    }
    // Newest first; artifacts of the same millisecond by id, descending.
    const newestFirst = (picked: number[]) =>
      picked
        .map((i) => made[i])
        .sort((a, b) => b.created_at.localeCompare(a.created_at) || b.id.localeCompare(a.id))
        .map((a) => a.id);
    await create({ kind: 'summary', session_id: 'sess-other', tags: ['early'], content: 'elsewhere' });
    const all = await get('/v1/artifacts?session_id=sess-list');
    expect(all.json).toMatchObject({ object: 'list', has_more: false, next_cursor: null });
    expect(all.json.data.map((a: { id: string }) => a.id)).toEqual(newestFirst([0, 1, 2, 3, 4]));
    expect(all.json.data[0]).not.toHaveProperty('content');
    expect((await get('/v1/artifacts?session_id=sess-list&tag=early')).json.data.map((a: { id: string }) => a.id)).toEqual(newestFirst([0, 1, 2]));
    expect((await get('/v1/artifacts?session_id=sess-list&tag=earl')).json.data).toEqual([]);
    expect((await get('/v1/artifacts?session_id=sess-list&kind=trace')).json.data.map((a: { id: string }) => a.id)).toEqual(newestFirst([1, 3]));

    const paged: string[] = [];
    let path = '/v1/artifacts?session_id=sess-list&limit=2';
    for (let pages = 0; pages < 10; pages++) {
      const page = await get(path);
      expect(page.status).toBe(200);
      paged.push(...page.json.data.map((a: { id: string }) => a.id));
      if (!page.json.has_more) break;
      path = `/v1/artifacts?session_id=sess-list&limit=2&cursor=${page.json.next_cursor}`;
    }
    expect(paged).toEqual(newestFirst([0, 1, 2, 3, 4]));
    const bad = await get('/v1/artifacts?limit=0');
    expect([bad.status, bad.json.error.param]).toEqual([400, 'limit']);
    expect((await get('/v1/artifacts?cursor=garbage')).json.error.param).toBe('cursor');
  });

  it('a job recorded through JOB_ARTIFACTS is readable by its id at once, and listed once written', async () => {
    const input = job();
    const id = jobs.recordJob(input);
    expect(id).toMatch(/^[0-9a-f]{64}$/);
    const early = await get(`/v1/artifacts/${id}`);
    expect(early.status).toBe(200);
    expect((await get(`/v1/artifacts?kind=job&session_id=sess-jobs`)).json.data.map((a: { id: string }) => a.id)).not.toContain(id);
    expect((await get(`/v1/artifacts/${id}`, keyB)).status).toBe(404);

    await recorder.flush();
    const listed = await get(`/v1/artifacts?kind=job&session_id=sess-jobs&tag=output_mode:json`);
    expect(listed.json.data.map((a: { id: string }) => a.id)).toContain(id);
    const read = await get(`/v1/artifacts/${id}`);
    expect(read.json).toMatchObject({
      id,
      kind: 'job',
      job_id: input.jobId,
      session_id: 'sess-jobs',
      tags: ['output_mode:json'],
      metadata: { status: 'completed', model_ref: 'llama3:8b', tokens_out: 2 },
      transcript_url: `/v1/artifacts/${id}/transcript`,
      content: {
        job_id: input.jobId,
        status: 'completed',
        model_ref: 'llama3:8b',
        engine: 'vllm',
        engine_version: '0.6.3',
        seed: 42,
        max_tokens: 16,
        ctx: 8192,
        tokens_out: 2,
        decode_time_ms: 120,
        output_mode: 'json',
        params: { model: 'llama3:8b', max_tokens: 16, temperature: 0.1, messages: '[redacted]' },
        transcript: { storage: 'inline', truncated: false, text: input.transcript },
      },
    });
    expect(read.json).toEqual(early.json);
    const transcript = await get(`/v1/artifacts/${id}/transcript`);
    expect([transcript.status, transcript.headers.get('content-type'), transcript.text]).toEqual([200, 'text/event-stream; charset=utf-8', input.transcript]);
    const metrics = parsePrometheusText(await (await fetch(`${gw.url}/metrics`)).text());
    expect(metrics.get('switchboard_artifacts_written_total')?.samples[0].value).toBeGreaterThanOrEqual(1);
    expect(metrics.get('switchboard_artifacts_dropped_total')?.samples.map((x) => [x.labels.reason, x.value])).toEqual([
      ['buffer_full', 0],
      ['write_failed', 0],
    ]);
    // The prompt never reached the database.
    const rows: Array<{ content: string }> = await gw.app.get(DataSource).query('SELECT content FROM artifacts');
    expect(rows.length).toBeGreaterThan(0);
    expect(rows.some((r) => r.content.includes(CANARY))).toBe(false);
  });

  it('records a failed job with its error context, its large transcript stored apart and served whole', async () => {
    const events = Array.from({ length: 60 }, (_, i) => `id: ${i + 2}\nevent: token\ndata: {"t":"w${i}","i":${i}}\n\n`).join('');
    const transcript = `id: 1\nevent: started\ndata: {"queue_position":0}\n\n${events}id: 99\nevent: error\ndata: {"code":"worker_disconnected","retriable":true,"message":"The worker disconnected during the response"}\n\n`;
    expect(Buffer.byteLength(transcript)).toBeGreaterThan(INLINE_TRANSCRIPT_BYTES);
    const id = jobs.recordJob(
      job({
        status: 'failed',
        tokensOut: 60,
        transcript,
        error: { code: 'worker_disconnected', message: 'The worker disconnected during the response', retriable: true },
      }),
    );
    // Before the write, from memory; after it, from the database: the same answers.
    const before = [await get(`/v1/artifacts/${id}`), await get(`/v1/artifacts/${id}/transcript`)];
    await recorder.flush();
    const read = await get(`/v1/artifacts/${id}`);
    expect(read.json).toEqual(before[0].json);
    expect(read.json.metadata).toEqual({ status: 'failed', model_ref: 'llama3:8b', tokens_out: 60, error_code: 'worker_disconnected' });
    expect(read.json.content.error).toEqual({ code: 'worker_disconnected', message: 'The worker disconnected during the response', retriable: true });
    expect(read.json.content.transcript).toEqual({
      storage: 'separate',
      bytes: Buffer.byteLength(transcript),
      sha256: createHash('sha256').update(transcript).digest('hex'),
      truncated: false,
    });
    const served = await get(`/v1/artifacts/${id}/transcript`);
    expect(served.text).toBe(transcript);
    expect(before[1].text).toBe(transcript);
    expect((await get(`/v1/artifacts/${id}?include=transcript`)).json.content.transcript.text).toBe(transcript);
    expect((await get(`/v1/artifacts/${id}/transcript`, keyB)).status).toBe(404);
    expect((await get(`/v1/artifacts/${id}?include=everything`)).json.error.param).toBe('include');
  });

  it('cuts a transcript above artifacts.max_transcript_bytes with a marker instead of losing the record', async () => {
    const huge = Array.from({ length: 1000 }, (_, i) => `id: ${i}\nevent: token\ndata: {"t":"w","i":${i}}\n\n`).join('');
    const id = jobs.recordJob(job({ transcript: huge }));
    await recorder.flush();
    const read = await get(`/v1/artifacts/${id}`);
    expect(read.json.content.transcript).toMatchObject({ storage: 'separate', truncated: true, original_bytes: Buffer.byteLength(huge) });
    const served = await get(`/v1/artifacts/${id}/transcript`);
    expect(Buffer.byteLength(served.text)).toBeLessThanOrEqual(8192);
    expect(served.text).toMatch(/\n: transcript truncated, \d+ bytes omitted\n\n/);
    expect(served.text.startsWith('id: 0\n')).toBe(true);
    expect(served.text.endsWith('id: 999\nevent: token\ndata: {"t":"w","i":999}\n\n')).toBe(true);
  });

  it('answers 404 for unknown ids, malformed ids, and the transcript of an artifact that has none', async () => {
    expect((await get(`/v1/artifacts/${'0'.repeat(64)}`)).status).toBe(404);
    expect((await get('/v1/artifacts/not-an-id')).status).toBe(404);
    const plan = await create({ kind: 'plan', content: 'no transcript' });
    const none = await get(`/v1/artifacts/${plan.json.id}/transcript`);
    expect([none.status, none.json.error.code]).toEqual([404, 'not_found']);
  });
});

describe('artifacts at shutdown', () => {
  it('job artifacts still buffered when the gateway stops are written before the database closes', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sb-artifacts-'));
    const url = `sqlite:${join(dir, 'switchboard.db')}`;
    try {
      const gw = await startGateway({ DATABASE_URL: url, ARTIFACTS_FLUSH_INTERVAL_SECS: '3600' });
      const id = gw.app.get<JobArtifacts>(JOB_ARTIFACTS).recordJob({
        jobId: 'task-last',
        tenant: 'default',
        params: { model: 'm' },
        modelRef: 'm',
        status: 'cancelled',
        tokensOut: 0,
        decodeTimeMs: 0,
        transcript: '',
        createdAt: Date.now(),
      });
      await gw.close();
      const ds: DataSource = createDataSource(url);
      await ds.initialize();
      try {
        expect(await ds.query('SELECT id, job_id FROM artifacts')).toEqual([{ id, job_id: 'task-last' }]);
      } finally {
        await ds.destroy();
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

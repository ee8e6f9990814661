import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DataSource } from 'typeorm';
import { createDataSource } from '../../src/database/data-source-options';
import { StaleCleanupService } from '../../src/registry/stale-cleanup.service';
import { UsageRecordEntity } from '../../src/usage/usage-record.entity';
import { Dispatcher } from '../../src/dispatch/dispatcher.service';
import { RelayRequest, ResponseSink } from '../../src/dispatch/relay-request';
import { extractRequirements } from '../../src/routing/requirements';
import { admin, chat, eventually, post, RawResponse } from '../support/http';
import { startGateway, TEST_ADMIN_TOKEN, TestGateway } from '../support/gateway';
import { ScriptedWorker } from '../support/scripted-worker';

/** Slot time of real requests (their exact figures: test/usage/chargeback.e2e-spec.ts); no pool sets a price. */
const CHARGED = { worker_seconds: expect.any(Number), gpu_seconds: expect.any(Number), cost: null };

/** A phrase that only ever appears in prompts: it must never reach the database. */
const CANARY = 'CANARY-prompt-7f3a9c-do-not-store';

/** Usage records of real traffic through the gateway, read back through GET /admin/usage. */
describe('usage records and GET /admin/usage', () => {
  let gw: TestGateway;
  let worker: ScriptedWorker;
  let db: DataSource;
  let startedAt: number;

  const usage = (query = ''): Promise<RawResponse> => admin(gw.url, 'GET', `/admin/usage${query}`, TEST_ADMIN_TOKEN);

  function ask(model: string, tenant: string, extra: Record<string, unknown> = {}): Promise<RawResponse> {
    return post(gw.url, '/v1/chat/completions', chat(model, { messages: [{ role: 'user', content: `${CANARY} tell me a joke` }], ...extra }), {
      'x-tenant-id': tenant,
    });
  }

  /** A completed request whose worker reports `prompt`/`completion` tokens. */
  async function served(tenant: string, prompt: number, completion: number): Promise<void> {
    const pending = ask('usage-model', tenant);
    const req = await worker.next('request');
    worker.complete(req.request_id, { choices: [{ message: { content: `${CANARY} a joke` } }] }, 200, {
      token_counts: { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion },
    });
    expect((await pending).status).toBe(200);
  }

  beforeAll(async () => {
    startedAt = Date.now();
    gw = await startGateway({ USAGE_FLUSH_INTERVAL_SECS: '0.05', QUEUE_TIMEOUT_SECS: '5' });
    db = gw.app.get(DataSource);
    ({ worker } = await ScriptedWorker.register(gw.workerUrl, { models: ['usage-model'], max_concurrent: 4 }));

    await served('team-a', 10, 20);
    await served('team-a', 5, 7);
    await served('team-b', 100, 1);

    // Streamed: tokens arrive with the completion after the chunks.
    const stream = ask('usage-model', 'team-b', { stream: true });
    const streamed = await worker.next('request');
    worker.chunk(streamed.request_id, `data: ${JSON.stringify({ choices: [{ delta: { content: CANARY } }] })}\n\n`);
    worker.send({ type: 'response_complete', request_id: streamed.request_id, status_code: 200, token_counts: { prompt_tokens: 3, completion_tokens: 4 } });
    expect((await stream).status).toBe(200);

    // The worker fails one: counted as an error, no tokens.
    const failing = ask('usage-model', 'team-a');
    const failed = await worker.next('request');
    worker.send({ type: 'error', request_id: failed.request_id, code: 'backend_response_failed', message: 'backend reset the connection' });
    expect((await failing).status).toBe(502);

    // Nobody serves this model: an error without a provider or served model.
    expect((await ask('no-such-model', 'team-b')).status).toBe(404);

    // A request carrying an API key id (set by key authentication, which is not wired in yet).
    await viaDispatcherWithKey('team-c', 'key-42', 8, 2);

    await eventually(async () => (await usage()).json?.data?.[0]?.requests === 7);
  });

  afterAll(async () => {
    worker?.close();
    await gw?.close();
  });

  /** Submits a request like the inference route does, plus a key id, and lets the worker answer it. */
  async function viaDispatcherWithKey(tenant: string, keyId: string, prompt: number, completion: number): Promise<void> {
    let done!: (status: number) => void;
    const finished = new Promise<number>((resolve) => (done = resolve));
    const sink: ResponseSink = {
      clientGone: false,
      startStream: () => undefined,
      writeChunk: () => true,
      pendingBytes: 0,
      onDrain: () => undefined,
      abort: () => undefined,
      endStream: () => done(200),
      sendComplete: (status) => done(status),
      fail: () => done(500),
      routed: () => undefined,
      queueWaited: () => undefined,
    };
    const body = chat('usage-model', { messages: [{ role: 'user', content: CANARY }] });
    gw.app.get(Dispatcher).submit(
      new RelayRequest({
        id: `r-key-${keyId}`,
        model: 'usage-model',
        endpointPath: '/v1/chat/completions',
        isStreaming: false,
        body: JSON.stringify(body),
        headers: {},
        correlationId: 'usage-key-test',
        tenant,
        keyId,
        priority: 1,
        sink,
        route: { model: 'usage-model', requirements: extractRequirements('/v1/chat/completions', body) },
      }),
    );
    const req = await worker.next('request');
    worker.complete(req.request_id, { ok: true }, 200, { token_counts: { prompt_tokens: prompt, completion_tokens: completion } });
    expect(await finished).toBe(200);
  }

  it('totals every finished request, errors included', async () => {
    const res = await usage();
    expect(res.status).toBe(200);
    expect(res.json).toEqual({
      object: 'usage',
      group_by: null,
      filters: { tenant: null, key: null, since: null, until: null },
      data: [{ requests: 7, errors: 2, prompt_tokens: 126, completion_tokens: 34, total_tokens: 160, ...CHARGED }],
      concurrency: [],
    });
  });

  it('groups by tenant', async () => {
    expect((await usage('?group_by=tenant')).json.data).toEqual([
      { tenant: 'team-a', requests: 3, errors: 1, prompt_tokens: 15, completion_tokens: 27, total_tokens: 42, ...CHARGED },
      { tenant: 'team-b', requests: 3, errors: 1, prompt_tokens: 103, completion_tokens: 5, total_tokens: 108, ...CHARGED },
      { tenant: 'team-c', requests: 1, errors: 0, prompt_tokens: 8, completion_tokens: 2, total_tokens: 10, ...CHARGED },
    ]);
  });

  it('groups by key id; requests without a key come last, as null', async () => {
    expect((await usage('?group_by=key')).json.data).toEqual([
      { key: 'key-42', requests: 1, errors: 0, prompt_tokens: 8, completion_tokens: 2, total_tokens: 10, ...CHARGED },
      { key: null, requests: 6, errors: 2, prompt_tokens: 118, completion_tokens: 32, total_tokens: 150, ...CHARGED },
    ]);
  });

  it('groups by served model; requests no provider took come last, as null', async () => {
    expect((await usage('?group_by=model')).json.data).toEqual([
      { model: 'usage-model', requests: 6, errors: 1, prompt_tokens: 126, completion_tokens: 34, total_tokens: 160, ...CHARGED },
      { model: null, requests: 1, errors: 1, prompt_tokens: 0, completion_tokens: 0, total_tokens: 0, worker_seconds: 0, gpu_seconds: 0, cost: null },
    ]);
  });

  it('groups by UTC day', async () => {
    const days = new Set([new Date(startedAt).toISOString().slice(0, 10), new Date().toISOString().slice(0, 10)]);
    const data = (await usage('?group_by=day')).json.data as Array<{ day: string; requests: number }>;
    expect(data.every((d) => days.has(d.day))).toBe(true);
    expect(data.reduce((n, d) => n + d.requests, 0)).toBe(7);
  });

  it('filters by tenant, key and time', async () => {
    expect((await usage('?tenant=team-a')).json.data).toEqual([
      { requests: 3, errors: 1, prompt_tokens: 15, completion_tokens: 27, total_tokens: 42, ...CHARGED },
    ]);
    expect((await usage('?key=key-42&group_by=tenant')).json.data).toEqual([
      { tenant: 'team-c', requests: 1, errors: 0, prompt_tokens: 8, completion_tokens: 2, total_tokens: 10, ...CHARGED },
    ]);
    const since = new Date(startedAt - 60_000).toISOString();
    const res = await usage(`?since=${since}&until=${Date.now() + 60_000}&tenant=team-b`);
    expect(res.json.filters).toEqual({ tenant: 'team-b', key: null, since, until: expect.any(String) });
    expect(res.json.data[0].requests).toBe(3);
    expect((await usage(`?until=${startedAt - 60_000}`)).json.data[0].requests).toBe(0);
    expect((await usage('?since=2999-01-01')).json.data[0].requests).toBe(0);
  });

  it('answers 400 with a clear message for bad parameters', async () => {
    const badGroup = await usage('?group_by=week');
    expect(badGroup.status).toBe(400);
    expect(badGroup.json.error).toMatchObject({
      code: 'invalid_request',
      param: 'group_by',
      message: "Query parameter 'group_by' must be one of tenant, key, model, pool, day, got 'week'",
    });
    const badDate = await usage('?since=last-tuesday');
    expect(badDate.status).toBe(400);
    expect(badDate.json.error.message).toMatch(/'since' must be an ISO-8601 date or date-time .* or epoch milliseconds, got 'last-tuesday'/);
    expect((await usage('?since=2025-02-01&until=2025-01-01')).json.error.message).toMatch(/'since' must be before 'until'/);
    expect((await usage('?tenant=a&tenant=b')).status).toBe(400);
    expect((await usage('?tenants=a')).json.error.message).toMatch(/Unknown query parameter 'tenants'/);
  });

  it('needs the admin token', async () => {
    expect((await admin(gw.url, 'GET', '/admin/usage', 'wrong')).status).toBe(401);
    expect((await fetch(`${gw.url}/admin/usage`)).status).toBe(401);
  });

  it('stores one row per request with the details chargeback needs', async () => {
    const rows: Array<Record<string, unknown>> = await db.query('SELECT * FROM usage_records ORDER BY received_at');
    expect(rows).toHaveLength(7);
    const keyed = rows.find((r) => r.key_id === 'key-42')!;
    expect(keyed).toMatchObject({
      tenant: 'team-c',
      requested_model: 'usage-model',
      served_model: 'usage-model',
      provider: 'local',
      endpoint: '/v1/chat/completions',
      status: 200,
      error_code: null,
      prompt_tokens: 8,
      completion_tokens: 2,
    });
    expect(String(keyed.worker_id)).toMatch(/^w-/);
    expect(Number(keyed.duration_ms)).toBeGreaterThanOrEqual(Number(keyed.ttfb_ms));
    expect(rows.find((r) => r.requested_model === 'no-such-model')).toMatchObject({
      status: 404,
      error_code: 'model_not_found',
      provider: null,
      served_model: null,
      worker_id: null,
      ttfb_ms: null,
    });
    expect(rows.filter((r) => r.error_code === 'worker_error')).toHaveLength(1);
  });

  it('stores no prompt or output: the canary phrase is in no row of any table', async () => {
    const tables: Array<{ name: string }> = await db.query("SELECT name FROM sqlite_master WHERE type = 'table'");
    expect(tables.map((t) => t.name)).toContain('usage_records');
    for (const { name } of tables) {
      const rows = await db.query(`SELECT * FROM "${name}"`);
      expect(JSON.stringify(rows)).not.toContain(CANARY);
    }
  });

  it('prunes rows older than USAGE_RETENTION_DAYS with the stale-cleanup job', async () => {
    const repo = db.getRepository(UsageRecordEntity);
    const template = await repo.findOneByOrFail({ requestedModel: 'no-such-model' });
    const old = Date.now() - 91 * 86_400_000;
    await repo.insert({ ...template, id: 'r-ancient', receivedAt: old, day: new Date(old).toISOString().slice(0, 10) });
    const result = await gw.app.get(StaleCleanupService).sweep();
    expect(result.pruned).toMatchObject({ usage_records: 1 });
    expect(await repo.countBy({ id: 'r-ancient' })).toBe(0);
    expect(await repo.count()).toBe(7);
  });
});

describe('usage records at shutdown', () => {
  it('writes the records of requests that finish while the gateway drains its workers', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'switchboard-usage-shutdown-'));
    const url = `sqlite:${join(dir, 'switchboard.db')}`;
    try {
      // A long flush period: only the shutdown flush can write the record.
      const gw = await startGateway({ DATABASE_URL: url, USAGE_FLUSH_INTERVAL_SECS: '600' });
      const { worker } = await ScriptedWorker.register(gw.workerUrl, { models: ['drain-model'] });
      const pending = post(gw.url, '/v1/chat/completions', chat('drain-model'), { 'x-tenant-id': 'late-team' });
      const req = await worker.next('request');
      const closing = gw.close();
      await worker.next('graceful_shutdown');
      worker.complete(req.request_id, { ok: true }, 200, { token_counts: { prompt_tokens: 2, completion_tokens: 3 } });
      expect((await pending).status).toBe(200);
      worker.close();
      await closing;

      const check = await createDataSource(url).initialize();
      try {
        expect(await check.getRepository(UsageRecordEntity).find()).toEqual([
          expect.objectContaining({ tenant: 'late-team', servedModel: 'drain-model', status: 200, promptTokens: 2, completionTokens: 3 }),
        ]);
      } finally {
        await check.destroy();
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

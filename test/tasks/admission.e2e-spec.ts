import { startGateway, TestGateway } from '../support/gateway';
import { post } from '../support/http';
import { ScriptedWorker } from '../support/scripted-worker';
import { writeConfig } from '../support/routing';
import { chatDelta, chatTask, finish, submit, TaskStream } from './support';

const SMALL = { provider: 'small', secret: 'small-secret' };
const ALPHA = { provider: 'alpha', secret: 'alpha-secret' };
const BETA = { provider: 'beta', secret: 'beta-secret' };

describe('task API: admission checks before the task may queue', () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startGateway({
      CONFIG_FILE: writeConfig(`
providers:
  - name: local
    secret: test-worker-secret
  - name: small
    secret: small-secret
    max_queue_len: 1
  - name: alpha
    secret: alpha-secret
  - name: beta
    secret: beta-secret
  - name: off
    secret: off-secret
    enabled: false
  - name: empty
    secret: empty-secret
tenants:
  capped:
    session_tokens: 50
`),
    });
  });
  afterAll(() => gw.close());

  it('a malformed body is 400 invalid_params naming the field', async () => {
    const base = chatTask('any');
    const cases: Array<[unknown, string]> = [
      ['{not json', 'body'],
      ['[1, 2]', 'body'],
      [{ ...base, model: undefined }, 'model'],
      [{ model: 'any', max_tokens: 5 }, 'messages'],
      [{ ...base, prompt: 'also' }, 'prompt'],
      [{ ...base, messages: [] }, 'messages'],
      [{ ...base, messages: [{ role: 'user', content: 'ok' }, 'hi'] }, 'messages[1]'],
      [{ model: 'any', prompt: 5, max_tokens: 5 }, 'prompt'],
      [{ ...base, max_tokens: undefined }, 'max_tokens'],
      [{ ...base, max_tokens: 0 }, 'max_tokens'],
      [{ ...base, max_tokens: 1.5 }, 'max_tokens'],
      [{ ...base, max_tokens: 'ten' }, 'max_tokens'],
      [{ ...base, ctx: -1 }, 'ctx'],
      [{ ...base, task_id: 'has space' }, 'task_id'],
      [{ ...base, session_id: 42 }, 'session_id'],
      [{ ...base, pool_id: '' }, 'pool_id'],
      [{ ...base, priority: 'urgent' }, 'priority'],
      [{ ...base, budget: 5 }, 'budget'],
      [{ ...base, budget: { tokens: -1 } }, 'budget.tokens'],
      [{ ...base, budget: { time_secs: 0 } }, 'budget.time_secs'],
      [{ ...base, tags: ['ok', 'not ok'] }, 'tags[1]'],
      [{ ...base, tags: 'ok' }, 'tags'],
      [{ ...base, parents: ['nope'] }, 'parents[0]'],
    ];
    for (const [body, param] of cases) {
      const res = await submit(gw, body);
      expect([param, res.status, res.json.error]).toEqual([
        param,
        400,
        expect.objectContaining({ code: 'invalid_params', kind: 'INVALID_PARAMS', param, check: 'params', retriable: false }),
      ]);
    }
  });

  it('an unknown model is refused before it queues, and says the model check failed', async () => {
    const res = await submit(gw, chatTask('no-such-model'));
    expect(res.status).toBe(400);
    expect(res.json.error).toMatchObject({
      code: 'unknown_model',
      kind: 'ADMISSION_REJECT',
      check: 'model',
      retriable: false,
      message: "Model 'no-such-model' not found",
    });
    // The inference routes keep their 404.
    expect((await post(gw.url, '/v1/chat/completions', chatTask('no-such-model'))).status).toBe(404);
  });

  it('prompt + max_tokens must fit ctx, and the context of a worker that could serve the task', async () => {
    const big = 'x'.repeat(400); // about 100 tokens
    const byCtx = await submit(gw, { model: 'ctx-m', prompt: big, max_tokens: 100, ctx: 150 });
    expect(byCtx.status).toBe(400);
    expect(byCtx.json.error).toMatchObject({
      code: 'context_exceeded',
      kind: 'ADMISSION_REJECT',
      retriable: false,
      param: 'ctx',
      check: 'context',
      estimated_prompt_tokens: 100,
      max_tokens: 100,
      ctx: 150,
    });

    const small = await ScriptedWorker.register(gw.workerUrl, { models: ['ctx-m'], capabilities: { 'ctx-m': { context_length: 1000 } }, max_concurrent: 4 });
    const tooLong = await submit(gw, { model: 'ctx-m', prompt: big, max_tokens: 950 });
    expect(tooLong.status).toBe(400);
    expect(tooLong.json.error).toMatchObject({
      code: 'context_exceeded',
      param: 'max_tokens',
      check: 'context',
      estimated_prompt_tokens: 100,
      max_tokens: 950,
    });
    expect(tooLong.json.error.message).toContain("every worker serving model 'ctx-m'");
    // ctx is also what the task needs from its worker.
    expect((await submit(gw, { model: 'ctx-m', prompt: 'hi', max_tokens: 10, ctx: 2000 })).json.error.code).toBe('context_exceeded');
    const fits = await submit(gw, { model: 'ctx-m', prompt: big, max_tokens: 800 });
    expect(fits.status).toBe(202);
    await small.worker.next('request');

    // With a bigger worker around, the task goes to it.
    const large = await ScriptedWorker.register(gw.workerUrl, { models: ['ctx-m'], capabilities: { 'ctx-m': { context_length: 4000 } }, max_concurrent: 4 });
    expect((await submit(gw, { model: 'ctx-m', prompt: big, max_tokens: 2000 })).status).toBe(202);
    await large.worker.next('request');
    expect(small.worker.count('request')).toBe(1);
    small.worker.close();
    large.worker.close();
  });

  it('a full queue is 429 with Retry-After, X-Backoff-Ms, policy_label, retriable and retry_after_ms', async () => {
    const { worker } = await ScriptedWorker.register(gw.workerUrl, { models: ['q-full'], max_concurrent: 1 }, SMALL);
    expect((await submit(gw, chatTask('q-full', { pool_id: 'small' }))).json.queue_position).toBe(0);
    expect((await submit(gw, chatTask('q-full', { pool_id: 'small' }))).json.queue_position).toBe(1);
    const full = await submit(gw, chatTask('q-full', { pool_id: 'small', task_id: 'no-room' }));
    expect(full.status).toBe(429);
    expect(full.headers.get('retry-after')).toMatch(/^\d+$/);
    expect(Number(full.headers.get('x-backoff-ms'))).toBeGreaterThan(0);
    expect(full.json.error).toMatchObject({
      code: 'queue_full',
      kind: 'QUEUE_FULL_DROP_LRU',
      policy_label: 'queue_full_reject',
      retriable: true,
      retry_after_ms: Number(full.headers.get('x-backoff-ms')),
      check: 'queue',
      pool_id: 'small',
      queue_depth: 1,
    });
    // A refused task does not exist: its id is free.
    expect((await fetch(`${gw.url}/v1/tasks/no-room`)).status).toBe(404);
    worker.close();
  });

  it('pool_id pins the task: an unknown pool is invalid_params, one that cannot serve is pool_unready, never another pool', async () => {
    const unknown = await submit(gw, chatTask('pin-m', { pool_id: 'nowhere' }));
    expect(unknown.status).toBe(400);
    expect(unknown.json.error).toMatchObject({ code: 'invalid_params', param: 'pool_id', check: 'pool', message: "Unknown provider 'nowhere' in pool_id" });
    const a = await ScriptedWorker.register(gw.workerUrl, { models: ['pin-m'], max_concurrent: 4 }, ALPHA);
    const b = await ScriptedWorker.register(gw.workerUrl, { models: ['pin-m'], max_concurrent: 4 }, BETA);
    for (const pool of ['off', 'empty']) {
      const res = await submit(gw, chatTask('pin-m', { pool_id: pool }));
      expect([pool, res.status, res.json.error.code, res.json.error.check, res.json.error.pool_id]).toEqual([pool, 503, 'pool_unready', 'pool', pool]);
    }
    for (let i = 0; i < 3; i++) {
      const res = await submit(gw, chatTask('pin-m', { pool_id: 'beta' }));
      expect(res.status).toBe(202);
      const req = await b.worker.next('request');
      expect(JSON.parse(req.body)).not.toHaveProperty('pool_id');
      expect(req.headers).not.toHaveProperty('x-switchboard-provider');
      expect((await fetch(`${gw.url}/v1/tasks/${res.json.task_id}`).then((r) => r.json())).pool_id).toBe('beta');
    }
    expect(a.worker.count('request')).toBe(0);
    a.worker.close();
    b.worker.close();
  });

  it("the session's token budget (within the tenant's maximum) is checked against prompt + max_tokens", async () => {
    const { worker } = await ScriptedWorker.register(gw.workerUrl, { models: ['budget-m'], max_concurrent: 4 });
    const capped = { 'x-tenant-id': 'capped' };
    // The request asks for more than its tenant allows: the tenant's 50 applies.
    const over = await submit(gw, chatTask('budget-m', { session_id: 'sess', max_tokens: 60, budget: { tokens: 1000 } }), capped);
    expect(over.status).toBe(429);
    expect(over.json.error).toMatchObject({
      code: 'session_budget_exceeded',
      kind: 'ADMISSION_REJECT',
      retriable: false,
      check: 'session_tokens',
      limit: 50,
      used: 0,
      requested: 61,
    });

    const first = await submit(gw, chatTask('budget-m', { session_id: 'sess', max_tokens: 20, budget: { tokens: 30 } }), capped);
    expect(first.status).toBe(202);
    expect(first.headers.get('x-budget-remaining-tokens')).toBe('30');
    const req = await worker.next('request');
    const stream = new TaskStream(gw, first.json.task_id, capped);
    worker.chunk(
      req.request_id,
      chatDelta('a') + chatDelta('b') + `data: ${JSON.stringify({ choices: [], usage: { prompt_tokens: 6, completion_tokens: 15 } })}\n\n`,
    );
    finish(worker, req.request_id);
    await stream.done;
    const metrics = stream.events.filter((e) => e.event === 'metrics');
    // A worker took the task at once: its prompt (about 1 token) is charged as it starts.
    expect(metrics[0].data.budget_remaining).toEqual({ tokens: 29 });
    // The backend's usage (6 + 15) replaces the estimate: 21 used, 9 left.
    const second = await submit(gw, chatTask('budget-m', { session_id: 'sess', max_tokens: 10, budget: { tokens: 30 } }), capped);
    expect(second.status).toBe(429);
    expect(second.json.error).toMatchObject({ code: 'session_budget_exceeded', limit: 30, used: 21, remaining: 9, requested: 11 });
    expect(second.headers.get('x-budget-remaining-tokens')).toBe('9');
    const fits = await submit(gw, chatTask('budget-m', { session_id: 'sess', max_tokens: 8, budget: { tokens: 30 } }), capped);
    expect(fits.status).toBe(202);
    expect(fits.headers.get('x-budget-remaining-tokens')).toBe('9');
    // Another session of the tenant has its own budget.
    expect((await submit(gw, chatTask('budget-m', { session_id: 'other', max_tokens: 40 }), capped)).status).toBe(202);
    worker.close();
  });

  it('output_mode values other than text, json and edits are ignored', async () => {
    const { worker } = await ScriptedWorker.register(gw.workerUrl, { models: ['mode-m'] });
    const res = await submit(gw, chatTask('mode-m', { output_mode: 'yaml' }));
    expect(res.status).toBe(202);
    const req = await worker.next('request');
    expect(JSON.parse(req.body)).not.toHaveProperty('output_mode');
    worker.close();
  });
});

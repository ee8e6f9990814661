/**
 * Contract: capability-aware routing, aliases, fallback chains, strategies and pinning, black-box
 * (docs/routing.md). The test labels number the routing scenarios: US-01 routing by model,
 * US-02 capability requirements (vision, tools, context length), US-04 aliases, US-05 fallback
 * chains, US-06 strategies (round_robin, priority_only). Aliases and fallbacks are gateway
 * configuration, so this file runs its own gateways.
 */
import { expectAnthropicError, expectOpenAiError } from './support/expect-error';
import { spawnGateway, SpawnedGateway } from './support/server';
import { Scope } from './support/scope';
import { ScriptedWorker } from './support/worker';
import { chatBody, messagesBody, uniqueModel } from './support/util';

const ROUTING_YAML = `
routing:
  aliases:
    gpt-4: rt-llama3-70b
    gpt-4o-mini: rt-unserved-target
  fallbacks:
    rt-claude-opus: [rt-llama3-70b-fb, rt-mistral-7b-fb]
`;

const visionChat = (model: string) =>
  chatBody(model, {
    messages: [
      {
        role: 'user',
        content: [
          { type: 'text', text: 'what is this?' },
          { type: 'image_url', image_url: { url: 'data:image/png;base64,AAAA' } },
        ],
      },
    ],
  });
const toolsChat = (model: string) => chatBody(model, { tools: [{ type: 'function', function: { name: 'lookup', parameters: {} } }] });

function dedicated(label: string, configYaml = '', env: Record<string, string> = {}) {
  const ctx = {} as { gw: SpawnedGateway; scope: Scope; worker: (models: string[], extra?: Record<string, unknown>, name?: string) => Promise<ScriptedWorker> };
  beforeAll(async () => {
    ctx.gw = await spawnGateway({ label, configYaml, env });
    ctx.scope = new Scope({ baseUrl: ctx.gw.url, wsUrl: ctx.gw.wsUrl, adminToken: ctx.gw.env.ADMIN_TOKEN });
    ctx.worker = (models, extra = {}, name = 'worker') => ctx.scope.worker({ models, extra }, { secret: ctx.gw.env.WORKER_SECRET, provider: 'local' }, name);
  });
  afterEach(async () => ctx.scope.cleanup());
  afterAll(async () => {
    await ctx.gw?.stop('SIGTERM');
  });
  return ctx;
}

/** Requests each worker has answered so far (the rest are new). */
const answered = new WeakMap<ScriptedWorker, number>();

/** Sends one request, answers it on whichever worker got it, and returns that worker's label. */
async function servedBy(ctx: { scope: Scope }, workers: ScriptedWorker[], body: string): Promise<string> {
  const x = ctx.scope.post('/v1/chat/completions', body);
  for (;;) {
    const w = workers.find((candidate) => candidate.requests().length > (answered.get(candidate) ?? 0));
    if (w) {
      const n = answered.get(w) ?? 0;
      answered.set(w, n + 1);
      w.respondJson(w.requests()[n].request_id, { ok: true });
      expect((await x.done).status).toBe(200);
      return w.label;
    }
    await new Promise((r) => setTimeout(r, 5));
  }
}

describe('intelligent routing (dedicated gateway)', () => {
  const ctx = dedicated('routing', ROUTING_YAML);

  test('US-01: a request goes to the worker that has the model; an unknown model is 404 "Model \'x\' not found"', async () => {
    const [llama, mistral] = [uniqueModel('llama3'), uniqueModel('mistral')];
    const a = await ctx.worker([llama], {}, 'A');
    const b = await ctx.worker([mistral], {}, 'B');
    expect(await servedBy(ctx, [a, b], chatBody(llama))).toBe('A');
    const missing = await ctx.scope.post('/v1/chat/completions', chatBody('gpt-5-not-here')).done;
    expect(expectOpenAiError(missing, 404, 'model_not_found').message).toBe("Model 'gpt-5-not-here' not found");
  });

  test('US-02: vision and tools requests go only to workers that support them', async () => {
    const model = uniqueModel('caps');
    const plain = await ctx.worker([model], { capabilities: { [model]: { vision: false, tools: false } } }, 'plain');
    const capable = await ctx.worker([model], { capabilities: { [model]: { vision: true, tools: true } } }, 'capable');
    for (let i = 0; i < 3; i++) expect(await servedBy(ctx, [plain, capable], visionChat(model))).toBe('capable');
    for (let i = 0; i < 3; i++) expect(await servedBy(ctx, [plain, capable], toolsChat(model))).toBe('capable');
  });

  test('US-02: no worker with the capabilities → 400 capability_mismatch listing every missing one, in both dialects', async () => {
    const model = uniqueModel('novision');
    await ctx.worker([model], { capabilities: { [model]: { vision: false, tools: false } } });
    const both = JSON.parse(visionChat(model));
    both.tools = [{ type: 'function', function: { name: 'f' } }];
    const res = await ctx.scope.post('/v1/chat/completions', JSON.stringify(both)).done;
    expect(expectOpenAiError(res, 400, 'capability_mismatch').missing.sort()).toEqual(['tools', 'vision']);
    const anthropic = await ctx.scope.post(
      '/v1/messages',
      messagesBody(model, { messages: [{ role: 'user', content: [{ type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'AAAA' } }] }] }),
    ).done;
    expect(expectAnthropicError(anthropic, 400, 'capability_mismatch').missing).toEqual(['vision']);
  });

  test("US-02: a prompt longer than every worker's context is capability_mismatch context_length", async () => {
    const model = uniqueModel('ctx');
    await ctx.worker([model], { capabilities: { [model]: { context_length: 16 } } });
    const res = await ctx.scope.post('/v1/chat/completions', chatBody(model, { messages: [{ role: 'user', content: 'x'.repeat(400) }] })).done;
    expect(expectOpenAiError(res, 400, 'capability_mismatch').missing).toEqual(['context_length']);
  });

  test('US-04: an alias routes to its target; the worker sees the target model and the response names it', async () => {
    const w = await ctx.worker(['rt-llama3-70b']);
    const x = ctx.scope.post('/v1/chat/completions', chatBody('gpt-4', { temperature: 0.5 }));
    const req = await w.nextRequest();
    expect(req.model).toBe('rt-llama3-70b');
    expect(JSON.parse(req.body)).toMatchObject({ model: 'rt-llama3-70b', temperature: 0.5 });
    w.respondJson(req.request_id, { ok: true });
    const res = await x.done;
    expect(res.status).toBe(200);
    expect(res.headers['x-switchboard-model']).toBe('rt-llama3-70b');
    expect(res.headers['x-switchboard-fallback']).toBeUndefined();
  });

  test('US-04: an alias whose target nobody serves is 404 naming both the alias and the target', async () => {
    const res = await ctx.scope.post('/v1/chat/completions', chatBody('gpt-4o-mini')).done;
    const err = expectOpenAiError(res, 404, 'model_not_found');
    expect(err.message).toContain('gpt-4o-mini');
    expect(err.message).toContain('rt-unserved-target');
  });

  test('US-05: with no worker for the model or its first fallback, the second fallback serves', async () => {
    const w = await ctx.worker(['rt-mistral-7b-fb']);
    const x = ctx.scope.post('/v1/chat/completions', chatBody('rt-claude-opus'));
    const req = await w.nextRequest();
    expect(JSON.parse(req.body).model).toBe('rt-mistral-7b-fb');
    w.respondJson(req.request_id, { ok: true });
    const res = await x.done;
    expect(res.headers['x-switchboard-model']).toBe('rt-mistral-7b-fb');
    expect(res.headers['x-switchboard-fallback']).toBe('rt-claude-opus');
  });

  test('US-05: every model of the chain unavailable → 503 fallback_exhausted listing the attempted models', async () => {
    const res = await ctx.scope.post('/v1/chat/completions', chatBody('rt-claude-opus')).done;
    const err = expectOpenAiError(res, 503, 'fallback_exhausted');
    expect(err.attempted_models).toEqual(['rt-claude-opus', 'rt-llama3-70b-fb', 'rt-mistral-7b-fb']);
    expect(err.retriable).toBe(true);
  });

  test('pinning: an unknown provider in x-switchboard-provider is 400 invalid_params, never served elsewhere', async () => {
    const model = uniqueModel('pin');
    const w = await ctx.worker([model]);
    const res = await ctx.scope.post('/v1/chat/completions', chatBody(model), { 'x-switchboard-provider': 'no-such-pool' }).done;
    expectOpenAiError(res, 400, 'invalid_params');
    expect(w.requests()).toHaveLength(0);
  });
});

describe('routing strategies (dedicated gateways)', () => {
  describe('round_robin', () => {
    const ctx = dedicated('round-robin', '', { ROUTING_STRATEGY: 'round_robin' });
    test('US-06: 3 workers, 6 requests → exactly 2 each', async () => {
      const model = uniqueModel('rr');
      const ws = [await ctx.worker([model], {}, 'A'), await ctx.worker([model], {}, 'B'), await ctx.worker([model], {}, 'C')];
      const counts: Record<string, number> = {};
      for (let i = 0; i < 6; i++) {
        const label = await servedBy(ctx, ws, chatBody(model, { i }));
        counts[label] = (counts[label] ?? 0) + 1;
      }
      expect(counts).toEqual({ A: 2, B: 2, C: 2 });
    });
  });

  describe('priority_only', () => {
    const ctx = dedicated('priority-only', '', { ROUTING_STRATEGY: 'priority_only' });
    test('US-06: every request goes to the priority 1 worker, not the priority 2 one', async () => {
      const model = uniqueModel('prio');
      const second = await ctx.worker([model], { priority: 2 }, 'p2');
      const first = await ctx.worker([model], { priority: 1 }, 'p1');
      for (let i = 0; i < 5; i++) expect(await servedBy(ctx, [second, first], chatBody(model, { i }))).toBe('p1');
    });
  });
});

import OpenAI from 'openai';
import Anthropic from '@anthropic-ai/sdk';
import { startGateway, TestGateway, TEST_ADMIN_TOKEN } from '../support/gateway';
import { ScriptedWorker } from '../support/scripted-worker';
import { admin, chat, eventually, post } from '../support/http';
import { OK_BODY, workerView, writeConfig } from '../support/routing';
import { Call, DIALECTS, IMAGE_PNG, jsonCalls, send, served, toolsCall, visionCall, WEATHER_SCHEMA } from './support/capability-calls';

describe('routing by model and capability (US-01, US-02)', () => {
  let gw: TestGateway;
  let openai: OpenAI;
  let anthropic: Anthropic;
  beforeAll(async () => {
    const configFile = writeConfig(`
providers:
  - name: local
    secret: test-worker-secret
  - name: pausable
    secret: pausable-secret
  - name: curated
    secret: curated-secret
    capabilities:
      cur-model: { vision: false }
      '*': { tools: true }
`);
    gw = await startGateway({ CONFIG_FILE: configFile });
    openai = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: 'k', maxRetries: 0 });
    anthropic = new Anthropic({ baseURL: gw.url, apiKey: 'k', maxRetries: 0 });
  });
  afterAll(() => gw.close());

  describe('US-01 basic model routing', () => {
    it('routes a request to the worker that has the model, forwarding the body byte-for-byte', async () => {
      const a = await ScriptedWorker.register(gw.workerUrl, { models: ['llama3:8b'] });
      const b = await ScriptedWorker.register(gw.workerUrl, { models: ['mistral:7b'] });
      for (let i = 0; i < 3; i++) {
        const raw = `{ "model" : "llama3:8b",\n  "messages": [{"role":"user","content":"caf\\u00e9 #${i}"}], "seed": 12345678901234567890 }`;
        const pending = post(gw.url, '/v1/chat/completions', raw);
        const req = await a.worker.next('request');
        expect(req.model).toBe('llama3:8b');
        expect(req.body).toBe(raw);
        a.worker.complete(req.request_id, OK_BODY);
        const res = await pending;
        expect(res.status).toBe(200);
        expect(res.headers.get('x-switchboard-model')).toBe('llama3:8b');
        expect(res.headers.get('x-switchboard-fallback')).toBeNull();
      }
      expect(b.worker.count('request')).toBe(0);
      a.worker.close();
      b.worker.close();
    });

    it('a worker of a disabled provider takes no new work and its models leave /v1/models', async () => {
      const paused = await ScriptedWorker.register(
        gw.workerUrl,
        { models: ['pause-shared', 'pause-only'] },
        { provider: 'pausable', secret: 'pausable-secret' },
      );
      const local = await ScriptedWorker.register(gw.workerUrl, { models: ['pause-shared'] });
      expect((await admin(gw.url, 'PATCH', '/admin/providers/pausable', TEST_ADMIN_TOKEN, { enabled: false })).status).toBe(200);
      for (let i = 0; i < 3; i++)
        expect(await served(gw, { path: '/v1/chat/completions', body: chat('pause-shared') }, [paused.worker, local.worker])).toBe(local.worker);
      const refused = await post(gw.url, '/v1/chat/completions', chat('pause-only'));
      expect(refused.status).toBeGreaterThanOrEqual(400);
      expect(paused.worker.count('request')).toBe(0);
      const models: any = await (await fetch(`${gw.url}/v1/models`)).json();
      const ids = models.data.map((m: { id: string }) => m.id);
      expect(ids).toContain('pause-shared');
      expect(ids).not.toContain('pause-only');
      expect((await admin(gw.url, 'PATCH', '/admin/providers/pausable', TEST_ADMIN_TOKEN, { enabled: true })).status).toBe(200);
      expect(await served(gw, { path: '/v1/chat/completions', body: chat('pause-only') }, [paused.worker, local.worker])).toBe(paused.worker);
      paused.worker.close();
      local.worker.close();
    });

    it('404 model_not_found "Model \'gpt-5\' not found" in the OpenAI dialect (SDK)', async () => {
      const live = await ScriptedWorker.register(gw.workerUrl, { models: ['some-other-model'] });
      const err = await openai.chat.completions.create({ model: 'gpt-5', messages: [{ role: 'user', content: 'hi' }] }).catch((e) => e);
      expect(err).toBeInstanceOf(OpenAI.NotFoundError);
      expect(err.status).toBe(404);
      expect(err.error).toMatchObject({ code: 'model_not_found', message: "Model 'gpt-5' not found", retriable: false });
      expect(live.worker.count('request')).toBe(0);
      live.worker.close();
    });

    it('404 model_not_found "Model \'gpt-5\' not found" in the Anthropic dialect (SDK)', async () => {
      const err = await anthropic.messages.create({ model: 'gpt-5', max_tokens: 5, messages: [{ role: 'user', content: 'hi' }] }).catch((e) => e);
      expect(err).toBeInstanceOf(Anthropic.NotFoundError);
      expect(err.error).toEqual({
        type: 'error',
        error: { type: 'not_found_error', message: "Model 'gpt-5' not found", code: 'model_not_found', kind: 'INVALID_PARAMS', retriable: false },
      });
    });
  });

  describe('US-02 capability-based routing', () => {
    it.each(DIALECTS)('a vision request (%s) goes only to the worker whose model supports vision', async (dialect) => {
      const model = `vis-${dialect}`;
      const blind = await ScriptedWorker.register(gw.workerUrl, { models: [model], capabilities: { [model]: { vision: false } } });
      const seeing = await ScriptedWorker.register(gw.workerUrl, { models: [model], capabilities: { [model]: { vision: true } } });
      for (let i = 0; i < 3; i++) expect(await served(gw, visionCall[dialect](model), [blind.worker, seeing.worker])).toBe(seeing.worker);
      // Plain requests may still use the worker without vision.
      const plain = [
        await served(gw, toolsCall[dialect](model), [blind.worker, seeing.worker]),
        await served(gw, toolsCall[dialect](model), [blind.worker, seeing.worker]),
      ];
      expect(plain).toContain(blind.worker);
      blind.worker.close();
      seeing.worker.close();
    });

    it.each(DIALECTS)('a request with tools (%s) goes only to the worker whose model supports tools', async (dialect) => {
      const model = `tools-${dialect}`;
      const noTools = await ScriptedWorker.register(gw.workerUrl, { models: [model], capabilities: { [model]: { tools: false } } });
      const withTools = await ScriptedWorker.register(gw.workerUrl, { models: [model], capabilities: { [model]: { tools: true } } });
      for (let i = 0; i < 3; i++) expect(await served(gw, toolsCall[dialect](model), [noTools.worker, withTools.worker])).toBe(withTools.worker);
      noTools.worker.close();
      withTools.worker.close();
    });

    it('an empty tools array needs no tools support', async () => {
      const { worker } = await ScriptedWorker.register(gw.workerUrl, { models: ['empty-tools'], capabilities: { 'empty-tools': { tools: false } } });
      expect(await served(gw, { path: '/v1/chat/completions', body: chat('empty-tools', { tools: [] }) }, [worker])).toBe(worker);
      worker.close();
    });

    it.each(jsonCalls)('a JSON-mode request (%s) goes only to the worker whose model supports json_mode', async (_label, make) => {
      const model = `json-${_label.replace(/[^a-z]/g, '-')}`;
      const noJson = await ScriptedWorker.register(gw.workerUrl, { models: [model], capabilities: { [model]: { json_mode: false } } });
      const withJson = await ScriptedWorker.register(gw.workerUrl, { models: [model], capabilities: { [model]: { json_mode: true } } });
      for (let i = 0; i < 3; i++) expect(await served(gw, make(model), [noJson.worker, withJson.worker])).toBe(withJson.worker);
      noJson.worker.close();
      withJson.worker.close();
    });

    it('unknown capabilities count as supported (a worker that declares nothing takes vision + tools + JSON)', async () => {
      const { worker } = await ScriptedWorker.register(gw.workerUrl, {
        models: ['undeclared'],
        capabilities: { 'another-model': { vision: false, tools: false } },
      });
      const call = visionCall.chat('undeclared');
      Object.assign(call.body, { tools: toolsCall.chat('undeclared').body.tools, response_format: { type: 'json_object' } });
      expect(await served(gw, call, [worker])).toBe(worker);
      worker.close();
    });

    it("capabilities a worker declares under '*' apply to each of its models", async () => {
      const { worker } = await ScriptedWorker.register(gw.workerUrl, { models: ['star-caps'], capabilities: { '*': { vision: false } } });
      const res = await send(gw, visionCall.messages('star-caps'));
      expect(res.status).toBe(400);
      expect(res.json.error).toMatchObject({ code: 'capability_mismatch', missing: ['vision'] });
      expect(await served(gw, toolsCall.messages('star-caps'), [worker])).toBe(worker);
      worker.close();
    });

    it('400 capability_mismatch listing every missing capability, through the OpenAI SDK', async () => {
      const { worker } = await ScriptedWorker.register(gw.workerUrl, {
        models: ['llama3-text'],
        capabilities: { 'llama3-text': { vision: false, tools: false, json_mode: false } },
      });
      const err = await openai.chat.completions
        .create({
          model: 'llama3-text',
          messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: `data:image/png;base64,${IMAGE_PNG}` } }] }],
          tools: [{ type: 'function', function: { name: 'get_weather', parameters: WEATHER_SCHEMA } }],
          response_format: { type: 'json_object' },
        })
        .catch((e) => e);
      expect(err).toBeInstanceOf(OpenAI.BadRequestError);
      expect(err.status).toBe(400);
      expect(err.error).toMatchObject({ code: 'capability_mismatch', type: 'invalid_request_error', retriable: false });
      expect([...err.error.missing].sort()).toEqual(['json_mode', 'tools', 'vision']);
      expect(err.error.message).toContain('llama3-text');
      expect(worker.count('request')).toBe(0);
      worker.close();
    });

    it('400 capability_mismatch in the Anthropic dialect (SDK), the union of what every worker lacks', async () => {
      // One worker lacks vision, the other lacks tools: nobody can take a request that needs both.
      const a = await ScriptedWorker.register(gw.workerUrl, { models: ['claude-local'], capabilities: { 'claude-local': { vision: false, tools: true } } });
      const b = await ScriptedWorker.register(gw.workerUrl, { models: ['claude-local'], capabilities: { 'claude-local': { vision: true, tools: false } } });
      const err = await anthropic.messages
        .create({
          model: 'claude-local',
          max_tokens: 16,
          messages: [{ role: 'user', content: [{ type: 'image', source: { type: 'base64', media_type: 'image/png', data: IMAGE_PNG } }] }],
          tools: [{ name: 'get_weather', input_schema: { type: 'object' } }],
        })
        .catch((e) => e);
      expect(err).toBeInstanceOf(Anthropic.BadRequestError);
      expect(err.status).toBe(400);
      expect(err.error.type).toBe('error');
      expect(err.error.error).toMatchObject({ type: 'invalid_request_error', code: 'capability_mismatch', retriable: false });
      expect([...err.error.error.missing].sort()).toEqual(['tools', 'vision']);
      expect(a.worker.count('request') + b.worker.count('request')).toBe(0);
      a.worker.close();
      b.worker.close();
    });

    it('a Responses vision request is refused with capability_mismatch when no worker has vision (SDK)', async () => {
      const { worker } = await ScriptedWorker.register(gw.workerUrl, { models: ['resp-blind'], capabilities: { 'resp-blind': { vision: false } } });
      const err = await openai.responses
        .create({
          model: 'resp-blind',
          input: [{ role: 'user', content: [{ type: 'input_image', image_url: `data:image/png;base64,${IMAGE_PNG}`, detail: 'auto' }] }],
        })
        .catch((e) => e);
      expect(err).toBeInstanceOf(OpenAI.BadRequestError);
      expect(err.error).toMatchObject({ code: 'capability_mismatch', missing: ['vision'] });
      worker.close();
    });

    describe('context_length: estimated tokens = text characters / 4', () => {
      it('a request longer than the model context is refused; one that fits is served', async () => {
        const { worker } = await ScriptedWorker.register(gw.workerUrl, { models: ['ctx-100'], capabilities: { 'ctx-100': { context_length: 100 } } });
        const tooLong = await post(gw.url, '/v1/chat/completions', chat('ctx-100', { messages: [{ role: 'user', content: 'x'.repeat(404) }] }));
        expect(tooLong.status).toBe(400);
        expect(tooLong.json.error).toMatchObject({ code: 'capability_mismatch', missing: ['context_length'] });
        expect(worker.count('request')).toBe(0);
        // Only text parts count: the image part of a multipart message adds nothing.
        const fits = {
          path: '/v1/chat/completions',
          body: chat('ctx-100', { messages: [{ role: 'user', content: [{ type: 'text', text: 'x'.repeat(400) }] }] }),
        };
        expect(await served(gw, fits, [worker])).toBe(worker);
        worker.close();
      });

      it('the Anthropic system prompt counts toward the estimate', async () => {
        const { worker } = await ScriptedWorker.register(gw.workerUrl, {
          models: ['ctx-anthropic'],
          capabilities: { 'ctx-anthropic': { context_length: 100 } },
        });
        const tooLong = await post(gw.url, '/v1/messages', {
          model: 'ctx-anthropic',
          max_tokens: 5,
          system: 'y'.repeat(300),
          messages: [{ role: 'user', content: 'x'.repeat(104) }],
        });
        expect(tooLong.status).toBe(400);
        expect(tooLong.json.error).toMatchObject({ type: 'invalid_request_error', code: 'capability_mismatch', missing: ['context_length'] });
        const fits: Call = {
          path: '/v1/messages',
          body: {
            model: 'ctx-anthropic',
            max_tokens: 5,
            system: [{ type: 'text', text: 'y'.repeat(296) }],
            messages: [{ role: 'user', content: 'x'.repeat(104) }],
          },
        };
        expect(await served(gw, fits, [worker])).toBe(worker);
        worker.close();
      });

      it('a long request goes to the worker with the larger context', async () => {
        const small = await ScriptedWorker.register(gw.workerUrl, { models: ['ctx-mixed'], capabilities: { 'ctx-mixed': { context_length: 100 } } });
        const large = await ScriptedWorker.register(gw.workerUrl, { models: ['ctx-mixed'], capabilities: { 'ctx-mixed': { context_length: 100000 } } });
        const long = { path: '/v1/chat/completions', body: chat('ctx-mixed', { messages: [{ role: 'user', content: 'x'.repeat(2000) }] }) };
        for (let i = 0; i < 3; i++) expect(await served(gw, long, [small.worker, large.worker])).toBe(large.worker);
        small.worker.close();
        large.worker.close();
      });
    });

    describe('endpoints', () => {
      it('a worker that does not list the endpoint is excluded; one that declares no endpoints takes every endpoint', async () => {
        const chatOnly = await ScriptedWorker.register(gw.workerUrl, { models: ['ep-model'], endpoints: ['/v1/chat/completions'] });
        const any = await ScriptedWorker.register(gw.workerUrl, { models: ['ep-model'] });
        for (const path of ['/v1/embeddings', '/v1/responses']) {
          const body = { model: 'ep-model', input: 'hello' };
          for (let i = 0; i < 2; i++) expect(await served(gw, { path, body }, [chatOnly.worker, any.worker])).toBe(any.worker);
        }
        const chats = [await served(gw, { path: '/v1/chat/completions', body: chat('ep-model') }, [chatOnly.worker, any.worker])];
        chats.push(await served(gw, { path: '/v1/chat/completions', body: chat('ep-model') }, [chatOnly.worker, any.worker]));
        expect(chats).toContain(chatOnly.worker);
        chatOnly.worker.close();
        any.worker.close();
      });

      it('400 capability_mismatch when the only worker does not serve the endpoint', async () => {
        const { worker } = await ScriptedWorker.register(gw.workerUrl, { models: ['ep-only-chat'], endpoints: ['/v1/chat/completions'] });
        const res = await post(gw.url, '/v1/embeddings', { model: 'ep-only-chat', input: 'hello' });
        expect(res.status).toBe(400);
        expect(res.json.error.code).toBe('capability_mismatch');
        expect(res.json.error.missing.join(' ')).toContain('/v1/embeddings');
        expect(worker.count('request')).toBe(0);
        worker.close();
      });
    });

    it('a models_update with new capabilities changes where requests may go', async () => {
      const { worker, ack } = await ScriptedWorker.register(gw.workerUrl, { models: ['upd-model'], capabilities: { 'upd-model': { vision: false } } });
      const refused = await send(gw, visionCall.chat('upd-model'));
      expect(refused.status).toBe(400);
      expect(refused.json.error).toMatchObject({ code: 'capability_mismatch', missing: ['vision'] });
      worker.send({ type: 'models_update', models: ['upd-model'], current_load: 0, capabilities: { 'upd-model': { vision: true } } });
      await eventually(async () => (await workerView(gw, ack.worker_id))?.capabilities['upd-model']?.vision === true);
      expect(await served(gw, visionCall.chat('upd-model'), [worker])).toBe(worker);
      worker.close();
    });
  });

  describe('provider capability declarations override what workers advertise', () => {
    it('config file: the provider says no vision (worker says yes) and tools for every model (worker says no)', async () => {
      const { worker, ack } = await ScriptedWorker.register(
        gw.workerUrl,
        { models: ['cur-model'], capabilities: { 'cur-model': { vision: true, tools: false } } },
        { provider: 'curated', secret: 'curated-secret' },
      );
      const view = await workerView(gw, ack.worker_id);
      expect(view.capabilities['cur-model']).toMatchObject({ vision: false, tools: true });

      const vision = await send(gw, visionCall.chat('cur-model'));
      expect(vision.status).toBe(400);
      expect(vision.json.error).toMatchObject({ code: 'capability_mismatch', missing: ['vision'] });
      expect(await served(gw, toolsCall.chat('cur-model'), [worker])).toBe(worker);
      expect(worker.count('request')).toBe(1);

      // The admin API replaces the declarations: the worker's own hints apply again.
      const patched = await admin(gw.url, 'PATCH', '/admin/providers/curated', TEST_ADMIN_TOKEN, { capabilities: {} });
      expect(patched.status).toBe(200);
      expect(await served(gw, visionCall.chat('cur-model'), [worker])).toBe(worker);
      const tools = await send(gw, toolsCall.chat('cur-model'));
      expect(tools.status).toBe(400);
      expect(tools.json.error).toMatchObject({ code: 'capability_mismatch', missing: ['tools'] });

      // ...and declaring a capability through the admin API overrides the worker again.
      const declared = await admin(gw.url, 'PATCH', '/admin/providers/curated', TEST_ADMIN_TOKEN, {
        capabilities: { 'cur-model': { tools: true, context_length: 50 } },
      });
      expect(declared.status).toBe(200);
      expect(await served(gw, toolsCall.chat('cur-model'), [worker])).toBe(worker);
      const long = await post(gw.url, '/v1/chat/completions', chat('cur-model', { messages: [{ role: 'user', content: 'x'.repeat(400) }] }));
      expect(long.status).toBe(400);
      expect(long.json.error).toMatchObject({ code: 'capability_mismatch', missing: ['context_length'] });
      worker.close();
    });

    it('the admin API rejects malformed capability declarations', async () => {
      const res = await admin(gw.url, 'PATCH', '/admin/providers/curated', TEST_ADMIN_TOKEN, { capabilities: { m: { vision: 'yes' } } });
      expect(res.status).toBe(422);
      expect(res.json.error).toMatchObject({ code: 'validation_failed', fields: [expect.objectContaining({ field: 'capabilities.m.vision' })] });
    });
  });
});

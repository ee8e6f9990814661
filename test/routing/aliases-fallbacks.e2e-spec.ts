import OpenAI from 'openai';
import Anthropic from '@anthropic-ai/sdk';
import { startGateway, TestGateway } from '../support/gateway';
import { ScriptedWorker } from '../support/scripted-worker';
import { chat, eventually, post, sleep } from '../support/http';
import { OK_BODY, writeConfig } from '../support/routing';

const IMAGE = { type: 'image_url', image_url: { url: 'data:image/png;base64,AAAA' } };

async function listedModels(gw: TestGateway): Promise<string[]> {
  const res = await fetch(`${gw.url}/v1/models`);
  const body: any = await res.json();
  return body.data.map((m: { id: string }) => m.id);
}

describe('model aliases (US-04) and fallback chains (US-05)', () => {
  let gw: TestGateway;
  let openai: OpenAI;
  let anthropic: Anthropic;
  beforeAll(async () => {
    const configFile = writeConfig(`
providers:
  - name: local
    secret: test-worker-secret
routing:
  aliases:
    gpt-4: llama3:70b
    claude-3-sonnet: llama3:70b
    gpt-4o: ghost-target
    smart-alias: alias-target
  fallbacks:
    claude-3-opus: [llama3:405b, mistral:7b]
    busy-primary: [busy-fallback]
    vis-primary: [vis-fallback]
    lonely: [gone-1, gone-2]
    alias-target: [alias-fb]
    chain-a: [chain-b]
    chain-b: [chain-c]
`);
    gw = await startGateway({ CONFIG_FILE: configFile });
    openai = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: 'k', maxRetries: 0 });
    anthropic = new Anthropic({ baseURL: gw.url, apiKey: 'k', maxRetries: 0 });
  });
  afterAll(() => gw.close());

  describe('US-04 aliases', () => {
    it('an alias does not shadow a real model: a worker advertising the alias name gets the request (router seed step 5a)', async () => {
      // gpt-4o's target (ghost-target) has no worker: before, every request answered 404 while this worker was connected.
      const { worker } = await ScriptedWorker.register(gw.workerUrl, { models: ['gpt-4o'] });
      expect(await listedModels(gw)).toContain('gpt-4o');
      const pending = post(gw.url, '/v1/chat/completions', chat('gpt-4o'));
      const req = await worker.next('request');
      expect(req.model).toBe('gpt-4o');
      expect(JSON.parse(req.body).model).toBe('gpt-4o');
      worker.complete(req.request_id, OK_BODY);
      const res = await pending;
      expect(res.status).toBe(200);
      expect(res.headers.get('x-switchboard-model')).toBe('gpt-4o');
      worker.close();
      await worker.closed;
      // Gone, the alias applies again: its target has no worker.
      await eventually(async () => !(await listedModels(gw)).includes('gpt-4o'));
      expect((await post(gw.url, '/v1/chat/completions', chat('gpt-4o'))).status).toBe(404);
    });

    it('routes an alias to a worker with the target model; the worker sees the target in request.model and in the body, every other byte unchanged', async () => {
      const { worker } = await ScriptedWorker.register(gw.workerUrl, { models: ['llama3:70b'] });
      const raw =
        '{"stream":false,\n "model"  :  "gpt-4" ,"messages":[{"role":"user","content":"keep \\"model\\": \\"gpt-4\\" here"}],' +
        '"metadata":{"model":"gpt-4"},"n":1,"big":12345678901234567890123,"f":1.50,"u":"\\u00e9"}';
      const pending = post(gw.url, '/v1/chat/completions', raw);
      const req = await worker.next('request');
      expect(req.model).toBe('llama3:70b');
      expect(req.body).toBe(raw.replace('"model"  :  "gpt-4"', '"model"  :  "llama3:70b"'));
      expect(JSON.parse(req.body).model).toBe('llama3:70b');
      worker.complete(req.request_id, OK_BODY);
      const res = await pending;
      expect(res.status).toBe(200);
      expect(res.json).toEqual(OK_BODY);
      expect(res.headers.get('x-switchboard-model')).toBe('llama3:70b');
      expect(res.headers.get('x-switchboard-fallback')).toBeNull();
      worker.close();
    });

    it('routes an alias in the Anthropic dialect, rewriting only the top-level model', async () => {
      const { worker } = await ScriptedWorker.register(gw.workerUrl, { models: ['llama3:70b'] });
      const raw = '{"max_tokens":5,"messages":[{"role":"user","content":"hi"}],"model":"claude-3-sonnet","system":"model: claude-3-sonnet"}';
      const pending = post(gw.url, '/v1/messages', raw);
      const req = await worker.next('request');
      expect(req.model).toBe('llama3:70b');
      expect(req.endpoint_path).toBe('/v1/messages');
      expect(req.body).toBe('{"max_tokens":5,"messages":[{"role":"user","content":"hi"}],"model":"llama3:70b","system":"model: claude-3-sonnet"}');
      worker.complete(req.request_id, { type: 'message', content: [] });
      const res = await pending;
      expect(res.status).toBe(200);
      expect(res.headers.get('x-switchboard-model')).toBe('llama3:70b');
      worker.close();
    });

    it('a streamed response to an alias carries x-switchboard-model', async () => {
      const { worker } = await ScriptedWorker.register(gw.workerUrl, { models: ['llama3:70b'] });
      const pending = post(gw.url, '/v1/chat/completions', chat('gpt-4', { stream: true }));
      const req = await worker.next('request');
      expect(req.is_streaming).toBe(true);
      worker.chunk(req.request_id, 'data: {"choices":[]}\n\n');
      worker.send({ type: 'response_complete', request_id: req.request_id, status_code: 200 });
      const res = await pending;
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toContain('text/event-stream');
      expect(res.headers.get('x-switchboard-model')).toBe('llama3:70b');
      expect(res.text).toBe('data: {"choices":[]}\n\n');
      worker.close();
    });

    it('/v1/models lists an alias only while its target is served', async () => {
      const { worker } = await ScriptedWorker.register(gw.workerUrl, { models: ['llama3:70b'] });
      const ids = await listedModels(gw);
      expect(ids).toEqual(expect.arrayContaining(['llama3:70b', 'gpt-4', 'claude-3-sonnet']));
      expect(ids).not.toContain('gpt-4o'); // its target ghost-target is served by nobody
      expect(ids).not.toContain('ghost-target');
      worker.close();
      await worker.closed;
      await sleep(50);
      const after = await listedModels(gw);
      expect(after).not.toContain('gpt-4');
      expect(after).not.toContain('llama3:70b');
    });

    it('404 model_not_found naming both the alias and its target (OpenAI SDK)', async () => {
      const err = await openai.chat.completions.create({ model: 'gpt-4o', messages: [{ role: 'user', content: 'hi' }] }).catch((e) => e);
      expect(err).toBeInstanceOf(OpenAI.NotFoundError);
      expect(err.error).toMatchObject({ code: 'model_not_found', retriable: false });
      expect(err.error.message).toContain('gpt-4o');
      expect(err.error.message).toContain('ghost-target');
    });

    it('404 model_not_found naming both the alias and its target (Anthropic SDK)', async () => {
      const err = await anthropic.messages.create({ model: 'gpt-4o', max_tokens: 5, messages: [{ role: 'user', content: 'hi' }] }).catch((e) => e);
      expect(err).toBeInstanceOf(Anthropic.NotFoundError);
      expect(err.error.error).toMatchObject({ type: 'not_found_error', code: 'model_not_found', retriable: false });
      expect(err.error.error.message).toContain('gpt-4o');
      expect(err.error.error.message).toContain('ghost-target');
    });
  });

  describe('US-05 fallback chains', () => {
    it('serves a request with the first fallback that has an eligible worker, and says so in headers', async () => {
      const { worker } = await ScriptedWorker.register(gw.workerUrl, { models: ['mistral:7b'] });
      const raw = '{"model":"claude-3-opus","messages":[{"role":"user","content":"hi"}],"temperature":0.70}';
      const pending = post(gw.url, '/v1/chat/completions', raw);
      const req = await worker.next('request');
      expect(req.model).toBe('mistral:7b');
      expect(req.body).toBe('{"model":"mistral:7b","messages":[{"role":"user","content":"hi"}],"temperature":0.70}');
      worker.complete(req.request_id, OK_BODY);
      const res = await pending;
      expect(res.status).toBe(200);
      expect(res.headers.get('x-switchboard-model')).toBe('mistral:7b');
      expect(res.headers.get('x-switchboard-fallback')).toBe('claude-3-opus');
      worker.close();
    });

    it('prefers the earlier fallback when both fallbacks are served', async () => {
      const early = await ScriptedWorker.register(gw.workerUrl, { models: ['llama3:405b'] });
      const late = await ScriptedWorker.register(gw.workerUrl, { models: ['mistral:7b'] });
      for (let i = 0; i < 3; i++) {
        const pending = post(gw.url, '/v1/chat/completions', chat('claude-3-opus'));
        const req = await early.worker.next('request');
        expect(req.model).toBe('llama3:405b');
        early.worker.complete(req.request_id, OK_BODY);
        const res = await pending;
        expect(res.headers.get('x-switchboard-model')).toBe('llama3:405b');
        expect(res.headers.get('x-switchboard-fallback')).toBe('claude-3-opus');
      }
      expect(late.worker.count('request')).toBe(0);
      early.worker.close();
      late.worker.close();
    });

    it('does not fall back when the primary model is merely busy: the request waits for it', async () => {
      const primary = await ScriptedWorker.register(gw.workerUrl, { models: ['busy-primary'], max_concurrent: 1 });
      const fallback = await ScriptedWorker.register(gw.workerUrl, { models: ['busy-fallback'], max_concurrent: 4 });
      const first = post(gw.url, '/v1/chat/completions', chat('busy-primary', { n: 1 }));
      const r1 = await primary.worker.next('request');
      const second = post(gw.url, '/v1/chat/completions', chat('busy-primary', { n: 2 }));
      await sleep(150);
      expect(fallback.worker.count('request')).toBe(0);
      primary.worker.complete(r1.request_id, OK_BODY);
      const r2 = await primary.worker.next('request');
      expect(JSON.parse(r2.body).n).toBe(2);
      expect(r2.model).toBe('busy-primary');
      primary.worker.complete(r2.request_id, OK_BODY);
      const res = await second;
      expect(res.status).toBe(200);
      expect(res.headers.get('x-switchboard-model')).toBe('busy-primary');
      expect(res.headers.get('x-switchboard-fallback')).toBeNull();
      expect((await first).status).toBe(200);
      expect(fallback.worker.count('request')).toBe(0);
      primary.worker.close();
      fallback.worker.close();
    });

    it('falls back when the primary has workers but none with the required capability', async () => {
      const primary = await ScriptedWorker.register(gw.workerUrl, { models: ['vis-primary'], capabilities: { 'vis-primary': { vision: false } } });
      const fallback = await ScriptedWorker.register(gw.workerUrl, { models: ['vis-fallback'], capabilities: { 'vis-fallback': { vision: true } } });
      const pending = post(gw.url, '/v1/chat/completions', chat('vis-primary', { messages: [{ role: 'user', content: [IMAGE] }] }));
      const req = await fallback.worker.next('request');
      expect(req.model).toBe('vis-fallback');
      fallback.worker.complete(req.request_id, OK_BODY);
      const res = await pending;
      expect(res.status).toBe(200);
      expect(res.headers.get('x-switchboard-fallback')).toBe('vis-primary');
      // A request the primary can serve stays on the primary.
      const plain = post(gw.url, '/v1/chat/completions', chat('vis-primary'));
      const plainReq = await primary.worker.next('request');
      primary.worker.complete(plainReq.request_id, OK_BODY);
      expect((await plain).headers.get('x-switchboard-fallback')).toBeNull();
      primary.worker.close();
      fallback.worker.close();
    });

    it('applies the fallback chain of an alias target, naming the requested alias in x-switchboard-fallback', async () => {
      const { worker } = await ScriptedWorker.register(gw.workerUrl, { models: ['alias-fb'] });
      const pending = post(gw.url, '/v1/chat/completions', chat('smart-alias'));
      const req = await worker.next('request');
      expect(req.model).toBe('alias-fb');
      expect(JSON.parse(req.body).model).toBe('alias-fb');
      worker.complete(req.request_id, OK_BODY);
      const res = await pending;
      expect(res.status).toBe(200);
      expect(res.headers.get('x-switchboard-model')).toBe('alias-fb');
      expect(res.headers.get('x-switchboard-fallback')).toBe('smart-alias');
      worker.close();
    });

    it('when the fallback has workers but they are busy, the request waits for the fallback and is served by it', async () => {
      const fallback = await ScriptedWorker.register(gw.workerUrl, { models: ['gone-2', 'gone-2-busy'], max_concurrent: 1 });
      const held = post(gw.url, '/v1/chat/completions', chat('gone-2-busy'));
      const h = await fallback.worker.next('request');
      const pending = post(gw.url, '/v1/chat/completions', chat('lonely'));
      await sleep(100);
      expect(fallback.worker.count('request')).toBe(1);
      fallback.worker.complete(h.request_id, OK_BODY);
      const req = await fallback.worker.next('request');
      expect(req.model).toBe('gone-2');
      expect(JSON.parse(req.body).model).toBe('gone-2');
      fallback.worker.complete(req.request_id, OK_BODY);
      const res = await pending;
      expect(res.status).toBe(200);
      expect(res.headers.get('x-switchboard-model')).toBe('gone-2');
      expect(res.headers.get('x-switchboard-fallback')).toBe('lonely');
      expect((await held).status).toBe(200);
      fallback.worker.close();
      await fallback.worker.closed;
    });

    it('503 fallback_exhausted listing the attempted models (OpenAI SDK)', async () => {
      const err = await openai.chat.completions.create({ model: 'lonely', messages: [{ role: 'user', content: 'hi' }] }).catch((e) => e);
      expect(err).toBeInstanceOf(OpenAI.APIError);
      expect(err.status).toBe(503);
      expect(err.error).toMatchObject({ code: 'fallback_exhausted', type: 'server_error', retriable: true });
      expect(err.error.attempted_models).toEqual(['lonely', 'gone-1', 'gone-2']);
    });

    it('503 fallback_exhausted listing the attempted models (Anthropic SDK)', async () => {
      const err = await anthropic.messages.create({ model: 'lonely', max_tokens: 5, messages: [{ role: 'user', content: 'hi' }] }).catch((e) => e);
      expect(err).toBeInstanceOf(Anthropic.APIError);
      expect(err.status).toBe(503);
      expect(err.error.error).toMatchObject({ code: 'fallback_exhausted', retriable: true });
      expect(err.error.error.attempted_models).toEqual(['lonely', 'gone-1', 'gone-2']);
    });

    it('fallbacks are single-level: the fallback of a fallback is not tried', async () => {
      const { worker } = await ScriptedWorker.register(gw.workerUrl, { models: ['chain-c'] });
      const res = await post(gw.url, '/v1/chat/completions', chat('chain-a'));
      expect(res.status).toBe(503);
      expect(res.json.error).toMatchObject({ code: 'fallback_exhausted', attempted_models: ['chain-a', 'chain-b'] });
      expect(worker.count('request')).toBe(0);
      worker.close();
    });
  });
});

describe('/v1/models with a wildcard worker', () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startGateway({
      CONFIG_FILE: writeConfig(`
providers:
  - name: local
    secret: test-worker-secret
routing:
  aliases:
    gpt-4: served-by-wildcard
`),
    });
  });
  afterAll(() => gw.close());

  it('an alias whose target only a * worker serves is routed, and listed in /v1/models', async () => {
    const { worker } = await ScriptedWorker.register(gw.workerUrl, { models: ['named-model', '*'] });
    const pending = post(gw.url, '/v1/chat/completions', chat('gpt-4'));
    const req = await worker.next('request');
    expect(req.model).toBe('served-by-wildcard');
    worker.complete(req.request_id, OK_BODY);
    expect((await pending).status).toBe(200);
    const ids = await listedModels(gw);
    expect(ids).toContain('named-model');
    expect(ids).not.toContain('*');
    expect(ids).toContain('gpt-4');
    worker.close();
  });
});

import OpenAI from 'openai';
import Anthropic from '@anthropic-ai/sdk';
import { startGateway, TestGateway } from '../support/gateway';
import { ScriptedWorker } from '../support/scripted-worker';
import { chat, post, sleep } from '../support/http';
import { OK_BODY, workerView, writeConfig } from '../support/routing';

const PIN = 'x-switchboard-provider';
const ALPHA = { provider: 'alpha', secret: 'alpha-secret' };
const BETA = { provider: 'beta', secret: 'beta-secret' };
const IMAGE = { type: 'image_url', image_url: { url: 'data:image/png;base64,AAAA' } };

describe('provider pinning (x-switchboard-provider)', () => {
  let gw: TestGateway;
  let openai: OpenAI;
  let anthropic: Anthropic;
  beforeAll(async () => {
    gw = await startGateway({
      CONFIG_FILE: writeConfig(`
providers:
  - name: local
    secret: test-worker-secret
  - name: alpha
    secret: alpha-secret
  - name: beta
    secret: beta-secret
  - name: off
    secret: off-secret
    enabled: false
  - name: empty
    secret: empty-secret
routing:
  eject_after_failures: 1
  eject_cooldown_secs: 60
  eject_max_cooldown_secs: 60
  fallbacks:
    pin-fb-primary: [pin-fb-secondary]
`),
    });
    openai = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: 'k', maxRetries: 0 });
    anthropic = new Anthropic({ baseURL: gw.url, apiKey: 'k', maxRetries: 0 });
  });
  afterAll(() => gw.close());

  it('routes only within the pinned provider, and does not forward the pin header to the worker', async () => {
    const a = await ScriptedWorker.register(gw.workerUrl, { models: ['pin-shared'], max_concurrent: 4 }, ALPHA);
    const b = await ScriptedWorker.register(gw.workerUrl, { models: ['pin-shared'], max_concurrent: 4 }, BETA);
    for (let i = 0; i < 4; i++) {
      const pending = post(gw.url, '/v1/chat/completions', chat('pin-shared'), { [PIN]: 'beta', 'x-custom': 'kept' });
      const req = await b.worker.next('request');
      expect(req.headers['x-custom']).toBe('kept');
      expect(Object.keys(req.headers)).not.toContain(PIN);
      b.worker.complete(req.request_id, OK_BODY);
      expect((await pending).status).toBe(200);
    }
    expect(a.worker.count('request')).toBe(0);
    // The Anthropic dialect pins the same way.
    const pending = post(gw.url, '/v1/messages', { model: 'pin-shared', max_tokens: 5, messages: [{ role: 'user', content: 'hi' }] }, { [PIN]: 'alpha' });
    const req = await a.worker.next('request');
    expect(Object.keys(req.headers)).not.toContain(PIN);
    a.worker.complete(req.request_id, { type: 'message', content: [] });
    expect((await pending).status).toBe(200);
    expect(b.worker.count('request')).toBe(4);
    a.worker.close();
    b.worker.close();
  });

  it('a pinned request waits for its own provider while another provider has a free worker', async () => {
    const a = await ScriptedWorker.register(gw.workerUrl, { models: ['pin-busy'], max_concurrent: 1 }, ALPHA);
    const b = await ScriptedWorker.register(gw.workerUrl, { models: ['pin-busy'], max_concurrent: 1 }, BETA);
    const first = post(gw.url, '/v1/chat/completions', chat('pin-busy', { n: 1 }), { [PIN]: 'beta' });
    const r1 = await b.worker.next('request');
    // Alpha is busy with an unpinned request; when it frees its slot it must not take beta's queued request.
    const unpinned = post(gw.url, '/v1/chat/completions', chat('pin-busy', { n: 0 }));
    const r0 = await a.worker.next('request');
    const second = post(gw.url, '/v1/chat/completions', chat('pin-busy', { n: 2 }), { [PIN]: 'beta' });
    await sleep(100);
    a.worker.complete(r0.request_id, OK_BODY);
    expect((await unpinned).status).toBe(200);
    await sleep(100);
    expect(a.worker.count('request')).toBe(1);
    b.worker.complete(r1.request_id, OK_BODY);
    const r2 = await b.worker.next('request');
    expect(JSON.parse(r2.body).n).toBe(2);
    b.worker.complete(r2.request_id, OK_BODY);
    expect((await first).status).toBe(200);
    expect((await second).status).toBe(200);
    expect(a.worker.count('request')).toBe(1);
    a.worker.close();
    b.worker.close();
  });

  it('400 invalid_params for an unknown provider name (OpenAI SDK)', async () => {
    const { worker } = await ScriptedWorker.register(gw.workerUrl, { models: ['pin-unknown'] }, ALPHA);
    const err = await openai.chat.completions
      .create({ model: 'pin-unknown', messages: [{ role: 'user', content: 'hi' }] }, { headers: { [PIN]: 'nosuch' } })
      .catch((e) => e);
    expect(err).toBeInstanceOf(OpenAI.BadRequestError);
    expect(err.error).toMatchObject({ code: 'invalid_params', type: 'invalid_request_error', param: PIN, retriable: false });
    expect(worker.count('request')).toBe(0);
    worker.close();
  });

  it('400 invalid_params for an unknown provider name (Anthropic SDK)', async () => {
    const err = await anthropic.messages
      .create({ model: 'pin-unknown', max_tokens: 5, messages: [{ role: 'user', content: 'hi' }] }, { headers: { [PIN]: 'nosuch' } })
      .catch((e) => e);
    expect(err).toBeInstanceOf(Anthropic.BadRequestError);
    expect(err.error.error).toMatchObject({ type: 'invalid_request_error', code: 'invalid_params', retriable: false });
  });

  it('503 pool_unready with Retry-After for a disabled provider', async () => {
    const { worker } = await ScriptedWorker.register(gw.workerUrl, { models: ['pin-off'] }, ALPHA);
    const res = await post(gw.url, '/v1/chat/completions', chat('pin-off'), { [PIN]: 'off' });
    expect(res.status).toBe(503);
    expect(Number(res.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(res.json.error).toMatchObject({ code: 'pool_unready', retriable: true });
    expect(worker.count('request')).toBe(0);
    worker.close();
  });

  it('503 pool_unready (never another provider) when the pinned provider has no worker for the model', async () => {
    const a = await ScriptedWorker.register(gw.workerUrl, { models: ['pin-elsewhere'] }, ALPHA);
    const b = await ScriptedWorker.register(gw.workerUrl, { models: ['beta-other-model'] }, BETA);
    for (const provider of ['empty', 'beta']) {
      const res = await post(gw.url, '/v1/chat/completions', chat('pin-elsewhere'), { [PIN]: provider });
      expect(res.status).toBe(503);
      expect(res.json.error).toMatchObject({ code: 'pool_unready', retriable: true });
    }
    const err = await anthropic.messages
      .create({ model: 'pin-elsewhere', max_tokens: 5, messages: [{ role: 'user', content: 'hi' }] }, { headers: { [PIN]: 'empty' } })
      .catch((e) => e);
    expect(err).toBeInstanceOf(Anthropic.APIError);
    expect(err.status).toBe(503);
    expect(err.error.error).toMatchObject({ type: 'overloaded_error', code: 'pool_unready' });
    expect(a.worker.count('request')).toBe(0);
    expect(b.worker.count('request')).toBe(0);
    a.worker.close();
    b.worker.close();
  });

  it('503 pool_unready when every worker of the pinned provider is ejected; unpinned requests still go elsewhere', async () => {
    const a = await ScriptedWorker.register(gw.workerUrl, { models: ['pin-ejected'] }, ALPHA);
    const b = await ScriptedWorker.register(gw.workerUrl, { models: ['pin-ejected'] }, BETA);
    const failing = post(gw.url, '/v1/chat/completions', chat('pin-ejected'), { [PIN]: 'beta' });
    const req = await b.worker.next('request');
    b.worker.send({ type: 'error', request_id: req.request_id, code: 'backend_response_failed', message: 'boom' });
    expect((await failing).status).toBe(502);
    expect((await workerView(gw, b.ack.worker_id)).ejected).toBe(true); // eject_after_failures: 1
    const res = await post(gw.url, '/v1/chat/completions', chat('pin-ejected'), { [PIN]: 'beta' });
    expect(res.status).toBe(503);
    expect(res.json.error).toMatchObject({ code: 'pool_unready', retriable: true });
    expect(a.worker.count('request')).toBe(0);
    const unpinned = post(gw.url, '/v1/chat/completions', chat('pin-ejected'));
    const r = await a.worker.next('request');
    a.worker.complete(r.request_id, OK_BODY);
    expect((await unpinned).status).toBe(200);
    a.worker.close();
    b.worker.close();
  });

  it("400 capability_mismatch when the pinned provider's workers lack a capability another provider has", async () => {
    const a = await ScriptedWorker.register(gw.workerUrl, { models: ['pin-vision'], capabilities: { 'pin-vision': { vision: true } } }, ALPHA);
    const b = await ScriptedWorker.register(gw.workerUrl, { models: ['pin-vision'], capabilities: { 'pin-vision': { vision: false } } }, BETA);
    const err = await openai.chat.completions
      .create({ model: 'pin-vision', messages: [{ role: 'user', content: [IMAGE] }] } as never, { headers: { [PIN]: 'beta' } })
      .catch((e) => e);
    expect(err).toBeInstanceOf(OpenAI.BadRequestError);
    expect(err.error).toMatchObject({ code: 'capability_mismatch', missing: ['vision'] });
    expect(a.worker.count('request') + b.worker.count('request')).toBe(0);
    a.worker.close();
    b.worker.close();
  });

  it('503 pool_unready for a pinned model with a fallback chain that the pinned provider cannot serve at all', async () => {
    // Alpha serves the model and its fallback; beta serves neither. The pin allows beta only.
    const a = await ScriptedWorker.register(gw.workerUrl, { models: ['pin-fb-primary', 'pin-fb-secondary'] }, ALPHA);
    const b = await ScriptedWorker.register(gw.workerUrl, { models: ['beta-unrelated'] }, BETA);
    const res = await post(gw.url, '/v1/chat/completions', chat('pin-fb-primary'), { [PIN]: 'beta' });
    expect(a.worker.count('request')).toBe(0);
    expect(res.status).toBe(503);
    expect(res.json.error.code).toBe('pool_unready');
    a.worker.close();
    b.worker.close();
  });
});

describe('provider pinning disabled (routing.allow_pinning: false)', () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startGateway({
      CONFIG_FILE: writeConfig(`
providers:
  - name: local
    secret: test-worker-secret
routing:
  allow_pinning: false
`),
    });
  });
  afterAll(() => gw.close());

  it('400 invalid_params for a pinned request, even to an existing provider, in both dialects', async () => {
    const { worker } = await ScriptedWorker.register(gw.workerUrl, { models: ['nopin-model'] });
    const openaiRes = await post(gw.url, '/v1/chat/completions', chat('nopin-model'), { [PIN]: 'local' });
    expect(openaiRes.status).toBe(400);
    expect(openaiRes.json.error).toMatchObject({ code: 'invalid_params', type: 'invalid_request_error', retriable: false });
    const anthropicRes = await post(gw.url, '/v1/messages', { model: 'nopin-model', max_tokens: 5, messages: [] }, { [PIN]: 'local' });
    expect(anthropicRes.status).toBe(400);
    expect(anthropicRes.json).toMatchObject({ type: 'error', error: { type: 'invalid_request_error', code: 'invalid_params' } });
    expect(worker.count('request')).toBe(0);
    // Without the header the request is served as usual.
    const pending = post(gw.url, '/v1/chat/completions', chat('nopin-model'));
    const req = await worker.next('request');
    worker.complete(req.request_id, OK_BODY);
    expect((await pending).status).toBe(200);
    worker.close();
  });
});

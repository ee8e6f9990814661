import { startGateway, TestGateway, TEST_ADMIN_TOKEN } from '../support/gateway';
import { ScriptedWorker } from '../support/scripted-worker';
import { admin, post } from '../support/http';

/**
 * `providers[].translation` through the admin API: a pool set to `never` gets no translated requests,
 * `auto` brings them back, `null` falls back to `routing.translation` (here `never`), and the setting
 * is shown and validated.
 */
describe('a pool’s translation setting (admin API)', () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startGateway({ ROUTING_TRANSLATION: 'never' });
  });
  afterAll(() => gw.close());

  const call = (method: string, path: string, body?: unknown) => admin(gw.url, method, path, TEST_ADMIN_TOKEN, body);
  const message = { model: 'coder', max_tokens: 16, messages: [{ role: 'user', content: 'hi' }] };

  it('refuses, allows and inherits translation per pool', async () => {
    const { worker } = await ScriptedWorker.register(gw.workerUrl, { models: ['coder'], endpoints: ['/v1/chat/completions'] });
    // The gateway says never and the pool says nothing: no worker serves /v1/messages.
    const refused = await post(gw.url, '/v1/messages', message);
    expect(refused.status).toBe(400);
    expect(refused.json).toMatchObject({ type: 'error', error: { code: 'capability_mismatch' } });

    const patched = await call('PATCH', '/admin/providers/local', { translation: 'auto' });
    expect(patched.status).toBe(200);
    expect(patched.json.translation).toBe('auto');
    const pending = post(gw.url, '/v1/messages', message);
    const req = await worker.next('request');
    expect(req.endpoint_path).toBe('/v1/chat/completions');
    expect(JSON.parse(req.body)).toMatchObject({ model: 'coder', messages: [{ role: 'user', content: 'hi' }], max_tokens: 16 });
    worker.complete(req.request_id, {
      id: 'c1',
      object: 'chat.completion',
      created: 1,
      model: 'coder',
      choices: [{ index: 0, message: { role: 'assistant', content: 'hello' }, finish_reason: 'stop' }],
    });
    const answer = await pending;
    expect(answer.status).toBe(200);
    expect(answer.headers.get('x-switchboard-translated')).toBe('anthropic-messages');
    expect(answer.json).toMatchObject({
      type: 'message',
      role: 'assistant',
      model: 'coder',
      content: [{ type: 'text', text: 'hello' }],
      stop_reason: 'end_turn',
    });

    expect((await call('PATCH', '/admin/providers/local', { translation: null })).json.translation).toBeNull();
    expect((await post(gw.url, '/v1/messages', message)).status).toBe(400);
    const invalid = await call('PATCH', '/admin/providers/local', { translation: 'sometimes' });
    expect(invalid.status).toBe(422); // validation_failed, as for every admin field
    expect(JSON.stringify(invalid.json)).toMatch(/translation/);
    worker.close();
  });
});

import { startGateway, TestGateway } from '../support/gateway';
import { ScriptedWorker } from '../support/scripted-worker';
import { chat, post } from '../support/http';

/** What a hostile worker puts on its responses. */
const HOSTILE = {
  'content-type': 'application/json',
  'set-cookie': 'session=stolen; Domain=gateway.example; Path=/',
  'access-control-allow-origin': '*',
  'access-control-allow-credentials': 'true',
  'content-security-policy': "script-src 'unsafe-inline' *",
  'strict-transport-security': 'max-age=0',
  'x-frame-options': 'ALLOWALL',
  'x-ratelimit-limit-requests': '999999',
  'x-ratelimit-remaining-requests': '999999',
  'retry-after': '0',
  'x-switchboard-model': 'forged-model',
  'x-correlation-id': 'forged-id',
  'openai-processing-ms': '42',
  'x-request-id': 'backend-req-1',
  'x-cache-hit': 'true',
};

function expectFiltered(headers: Headers): void {
  for (const name of [
    'set-cookie',
    'access-control-allow-origin',
    'access-control-allow-credentials',
    'content-security-policy',
    'strict-transport-security',
    'x-frame-options',
    'retry-after',
  ]) {
    expect({ name, value: headers.get(name) }).toEqual({ name, value: null });
  }
  expect(headers.get('x-ratelimit-limit-requests')).not.toBe('999999');
  expect(headers.get('x-backend-ratelimit-limit-requests')).toBe('999999');
  expect(headers.get('x-backend-ratelimit-remaining-requests')).toBe('999999');
  expect(headers.get('x-backend-retry-after')).toBe('0');
  expect(headers.get('x-switchboard-model')).toBe('hdr-model');
  expect(headers.get('x-correlation-id')).toBe('client-corr');
  expect(headers.get('openai-processing-ms')).toBe('42');
  expect(headers.get('x-request-id')).toBe('backend-req-1');
  expect(headers.get('x-cache-hit')).toBe('true');
}

describe('conn: worker response headers reaching clients are filtered', () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startGateway();
  });
  afterAll(() => gw.close());

  it('on a complete (non-streaming) response', async () => {
    const { worker } = await ScriptedWorker.register(gw.workerUrl, { models: ['hdr-model'] });
    const pending = post(gw.url, '/v1/chat/completions', chat('hdr-model'), { 'x-correlation-id': 'client-corr' });
    const req = await worker.next('request');
    worker.complete(req.request_id, { ok: true }, 200, { headers: HOSTILE });
    const res = await pending;
    expect(res.status).toBe(200);
    expect(res.json).toEqual({ ok: true });
    expectFiltered(res.headers);
    worker.close();
  });

  it('on a stream started with response_start', async () => {
    const { worker } = await ScriptedWorker.register(gw.workerUrl, { models: ['hdr-model'], features: ['response_start'] });
    const pending = post(gw.url, '/v1/chat/completions', chat('hdr-model', { stream: true }), { 'x-correlation-id': 'client-corr' });
    const req = await worker.next('request');
    worker.send({ type: 'response_start', request_id: req.request_id, status_code: 200, headers: { ...HOSTILE, 'content-type': 'text/event-stream' } });
    worker.chunk(req.request_id, 'data: [DONE]\n\n');
    worker.send({ type: 'response_complete', request_id: req.request_id, status_code: 200 });
    const res = await pending;
    expect(res.status).toBe(200);
    expect(res.text).toBe('data: [DONE]\n\n');
    expectFiltered(res.headers);
    worker.close();
  });
});

import { startGateway, TestGateway } from '../support/gateway';
import { ScriptedWorker } from '../support/scripted-worker';
import { post } from '../support/http';

/**
 * count_tokens through a worker that advertises no endpoint list (a ModelRelay worker: unknown
 * means supported), whose backend turns out not to have the route: the client gets the gateway's
 * estimate, not the backend's 404; a backend that has the route answers itself.
 */
describe('count_tokens on a worker with unknown endpoints', () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startGateway();
  });
  afterAll(() => gw.close());

  const count = { model: 'relay-model', messages: [{ role: 'user', content: 'How many tokens is this sentence?' }] };

  it('answers the estimate when the backend has no such route, and relays the backend when it has', async () => {
    const { worker } = await ScriptedWorker.register(gw.workerUrl, { models: ['relay-model'] });
    const missing = post(gw.url, '/v1/messages/count_tokens', count);
    const first = await worker.next('request');
    expect(first.endpoint_path).toBe('/v1/messages/count_tokens'); // sent natively: the worker did not say it lacks it
    worker.complete(first.request_id, { error: { message: 'File Not Found' } }, 404);
    const estimated = await missing;
    expect(estimated.status).toBe(200);
    expect(estimated.headers.get('x-switchboard-estimate')).toBe('true');
    expect(estimated.json.input_tokens).toBeGreaterThan(0);

    const served = post(gw.url, '/v1/messages/count_tokens', count);
    const second = await worker.next('request');
    worker.complete(second.request_id, { input_tokens: 9 });
    const answer = await served;
    expect(answer.status).toBe(200);
    expect(answer.json).toEqual({ input_tokens: 9 });
    expect(answer.headers.get('x-switchboard-estimate')).toBeNull();
    worker.close();
  });
});

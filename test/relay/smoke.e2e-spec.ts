import OpenAI from 'openai';
import { startGateway, TestGateway } from '../support/gateway';
import { ScriptedWorker } from '../support/scripted-worker';

describe('relay smoke', () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startGateway();
  });
  afterAll(async () => {
    await gw.close();
  });

  it('relays a non-streaming chat completion through a worker', async () => {
    const { worker, ack } = await ScriptedWorker.register(gw.workerUrl, { models: ['m1'] });
    expect(ack.models).toEqual(['m1']);
    const client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: 'k', maxRetries: 0 });
    const pending = client.chat.completions.create({ model: 'm1', messages: [{ role: 'user', content: 'hi' }] });
    const req = await worker.next('request');
    expect(req.endpoint_path).toBe('/v1/chat/completions');
    worker.complete(req.request_id, {
      id: 'x',
      object: 'chat.completion',
      created: 1,
      model: 'm1',
      choices: [{ index: 0, message: { role: 'assistant', content: 'hello' }, finish_reason: 'stop' }],
    });
    const res = await pending;
    expect(res.choices[0].message.content).toBe('hello');
    worker.close();
  });
});

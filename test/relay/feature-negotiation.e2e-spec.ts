import { startGateway, TestGateway } from '../support/gateway';
import { ScriptedWorker } from '../support/scripted-worker';
import { chat, post, sleep } from '../support/http';

const SSE = 'data: {"choices":[{"delta":{"content":"hi"}}]}\n\n';

async function registerWith(gw: TestGateway, model: string, features?: unknown): Promise<{ worker: ScriptedWorker; ack: Record<string, any> }> {
  const worker = await ScriptedWorker.connect(gw.workerUrl);
  const frame: { type: string; [k: string]: unknown } = {
    type: 'register',
    worker_name: `w-${model}`,
    models: [model],
    max_concurrent: 2,
    protocol_version: '2026-04-bridge-v1',
  };
  if (features !== undefined) frame.features = features;
  worker.send(frame);
  return { worker, ack: await worker.next('register_ack') };
}

/** Protocol extensions are negotiated in register/register_ack and never used unasked. */
describe('feature negotiation', () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startGateway({ MAX_STREAM_BYTES: '64' });
  });
  afterAll(() => gw.close());

  it('answers the accepted subset of the features a worker asks for, and nothing to a worker that asks for none', async () => {
    const asked = await registerWith(gw, 'neg-a', ['response_start', 'teleport', 'cancel_reasons', 'response_start']);
    expect(asked.ack.features).toEqual(['response_start', 'cancel_reasons']);
    const legacy = await registerWith(gw, 'neg-b');
    expect('features' in legacy.ack).toBe(false);
    const none = await registerWith(gw, 'neg-c', []);
    expect(none.ack.features).toEqual([]);
    for (const w of [asked, legacy, none]) w.worker.close();
  });

  it("response_start's status and headers reach a streaming client (x-cache-hit included)", async () => {
    const { worker } = await registerWith(gw, 'neg-stream', ['response_start']);
    const pending = post(gw.url, '/v1/chat/completions', chat('neg-stream', { stream: true }));
    const req = await worker.next('request');
    worker.send({
      type: 'response_start',
      request_id: req.request_id,
      status_code: 200,
      headers: { 'content-type': 'text/event-stream', 'x-cache-hit': 'true', 'transfer-encoding': 'chunked' },
    });
    worker.chunk(req.request_id, SSE);
    worker.send({ type: 'response_complete', request_id: req.request_id, status_code: 200 });
    const res = await pending;
    expect(res.status).toBe(200);
    expect(res.headers.get('x-cache-hit')).toBe('true');
    expect(res.headers.get('x-correlation-id')).toBeTruthy();
    expect(res.text).toBe(SSE);
    worker.close();
  });

  it('a worker that did not negotiate response_start and sends it is closed 1002, like any unknown frame', async () => {
    const { worker } = await registerWith(gw, 'neg-rogue');
    const abort = new AbortController();
    const pending = post(gw.url, '/v1/chat/completions', chat('neg-rogue', { stream: true }), {}, abort.signal).catch(() => undefined);
    const req = await worker.next('request');
    worker.send({ type: 'response_start', request_id: req.request_id, status_code: 200 });
    expect(await worker.closed).toEqual({ code: 1002, reason: 'worker registration protocol error' });
    abort.abort(); // its request went back to the queue; nobody else serves the model
    await pending;
  });

  it('a worker without features streams exactly as before (no response_start needed)', async () => {
    const { worker } = await registerWith(gw, 'neg-legacy');
    const pending = post(gw.url, '/v1/chat/completions', chat('neg-legacy', { stream: true }));
    const req = await worker.next('request');
    worker.chunk(req.request_id, SSE);
    worker.send({ type: 'response_complete', request_id: req.request_id, status_code: 200 });
    const res = await pending;
    expect(res.text).toBe(SSE);
    expect(res.headers.get('content-type')).toBe('text/event-stream');
    worker.close();
  });

  it('a stream that outgrows MAX_STREAM_BYTES is cancelled with stream_too_large only for a worker that negotiated cancel_reasons', async () => {
    const big = `data: ${'x'.repeat(80)}\n\n`;
    const modern = await registerWith(gw, 'neg-big-a', ['cancel_reasons']);
    const legacy = await registerWith(gw, 'neg-big-b');
    for (const [w, model] of [
      [modern.worker, 'neg-big-a'],
      [legacy.worker, 'neg-big-b'],
    ] as const) {
      const pending = post(gw.url, '/v1/chat/completions', chat(model, { stream: true }));
      const req = await w.next('request');
      w.chunk(req.request_id, 'data: {}\n\n');
      await sleep(20);
      w.chunk(req.request_id, big);
      await pending;
    }
    expect((await modern.worker.next('cancel')).reason).toBe('stream_too_large');
    expect((await legacy.worker.next('cancel')).reason).toBe('client_disconnect');
    modern.worker.close();
    legacy.worker.close();
  });
});

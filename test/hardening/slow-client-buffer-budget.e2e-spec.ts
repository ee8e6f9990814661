/**
 * Issue 16 M3 and the total bound: response bytes the gateway holds for clients — non-streaming
 * bodies being collected and streamed data a client has not read — count against
 * MAX_BUFFERED_BYTES; above it new work is refused with a retriable 503 `gateway_overloaded` (in the
 * caller's dialect, with Retry-After) until those bytes leave, and work resumes by itself.
 */
import { connect } from 'node:net';
import { startGateway, TestGateway } from '../support/gateway';
import { ScriptedWorker } from '../support/scripted-worker';
import { chat, eventually, post, sleep } from '../support/http';
import { Dispatcher } from '../../src/dispatch/dispatcher.service';

describe('MAX_BUFFERED_BYTES: a total bound on buffered response bytes', () => {
  let gw: TestGateway;
  let dispatcher: Dispatcher;
  const BOUND = 256 * 1024;
  beforeAll(async () => {
    gw = await startGateway({ MAX_BUFFERED_BYTES: String(BOUND), STREAM_CLIENT_BUFFER_BYTES: String(8 * 1024 * 1024) });
    dispatcher = gw.app.get(Dispatcher);
  });
  afterAll(() => gw.close());

  it('collected non-streaming bodies over the bound refuse new work with a retriable 503 in both dialects; the body is answered whole; work resumes', async () => {
    const { worker } = await ScriptedWorker.register(gw.workerUrl, { models: ['budget-m'], max_concurrent: 4 });
    const big = post(gw.url, '/v1/chat/completions', chat('budget-m'));
    const req = await worker.next('request');
    // Multi-byte text: the answer's content-length must count bytes, over chunks that are never joined.
    const pieces = Array.from({ length: 2 }, (_, i) => `{"part":${i},"text":"${'é✓'.repeat(30_000)}"}`);
    for (const p of pieces) worker.chunk(req.request_id as string, p);
    await eventually(() => dispatcher.buffers.total >= BOUND, 10_000);

    const refused = await post(gw.url, '/v1/chat/completions', chat('budget-m'));
    expect(refused.status).toBe(503);
    expect(refused.headers.get('retry-after')).toBe('1');
    expect(refused.json.error).toMatchObject({ code: 'gateway_overloaded', retriable: true });
    const anthropic = await post(
      gw.url,
      '/v1/messages',
      { model: 'budget-m', max_tokens: 5, messages: [{ role: 'user', content: 'hi' }] },
      { 'anthropic-version': '2023-06-01' },
    );
    expect(anthropic.status).toBe(503);
    expect(anthropic.json).toMatchObject({ type: 'error', error: { type: 'overloaded_error' } });
    expect(worker.count('request')).toBe(1); // nothing refused reached the worker

    worker.send({ type: 'response_complete', request_id: req.request_id, status_code: 200, headers: { 'content-type': 'application/json' } });
    const answer = await big;
    expect(answer.status).toBe(200);
    expect(answer.text).toBe(pieces.join(''));
    await eventually(() => dispatcher.buffers.total === 0, 10_000);

    const again = post(gw.url, '/v1/chat/completions', chat('budget-m'));
    const next = await worker.next('request');
    worker.complete(next.request_id as string, { ok: true });
    expect((await again).status).toBe(200);
    worker.close();
  });

  it("a streaming client's unread data counts too: refused while it sits unread, accepted once the client reads it", async () => {
    const { worker } = await ScriptedWorker.register(gw.workerUrl, { models: ['budget-s'], max_concurrent: 4 });
    const body = JSON.stringify(chat('budget-s', { stream: true }));
    const client = connect(Number(new URL(gw.url).port), '127.0.0.1');
    client.write(`POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: ${body.length}\r\n\r\n${body}`);
    const req = await worker.next('request');
    client.pause();
    const piece = `data: ${'q'.repeat(64 * 1024)}\n\n`;
    // Past the socket buffers until the gateway itself holds more than the bound for this client.
    for (let i = 0; i < 200 && dispatcher.buffers.total < BOUND; i++) {
      worker.chunk(req.request_id as string, piece);
      await sleep(5);
    }
    await eventually(() => dispatcher.buffers.total >= BOUND, 10_000);
    const refused = await post(gw.url, '/v1/chat/completions', chat('budget-s'));
    expect(refused.status).toBe(503);
    expect(refused.json.error).toMatchObject({ code: 'gateway_overloaded', retriable: true });

    client.resume(); // the client reads: its backlog drains and the bound frees up
    await eventually(() => dispatcher.buffers.total === 0, 10_000);
    const accepted = post(gw.url, '/v1/chat/completions', chat('budget-s'));
    const next = await worker.next('request');
    worker.complete(next.request_id as string, { ok: true });
    expect((await accepted).status).toBe(200);
    worker.complete(req.request_id as string, '', 200, { body: '' });
    client.destroy();
    worker.close();
  });
});

/**
 * Contract: "Streaming chunk ordering and termination semantics" — response_chunk text is
 * forwarded byte-for-byte and in order, flushed promptly, response_complete ends the stream,
 * completion metadata is the source of final status; oversized streams end with an SSE error.
 */
import { parseSse, sseErrorCode } from './support/sse';
import { useScope } from './support/scope';
import { target } from './support/target';
import { chatBody, uniqueModel } from './support/util';

describe('streaming', () => {
  const scope = useScope();

  test('chunks reach the client in order, byte-for-byte, each flushed before the next is sent; completion ends the stream', async () => {
    const model = uniqueModel('stream');
    const w = await scope.worker({ models: [model] });
    // Arbitrary boundaries (mid-event, mid-line), a comment, multi-byte text and CRLF-free SSE.
    const chunks = [
      'data: {"id":"c1","choices":[{"index":0,"delta":{"content":"Hé',
      'llo"}}]}\n',
      '\ndata: {"id":"c1","choices":[{"index":0,"delta":{"content":" wörld ✓ 🚀"}}]}\n\n',
      ': keep-alive comment\n\n',
      'data: {"id":"c1","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\ndata: [DONE]\n\n',
    ];
    const x = scope.post('/v1/chat/completions', chatBody(model, { stream: true }));
    const req = await w.nextRequest();
    let expected = '';
    for (const c of chunks) {
      w.chunk(req.request_id, c);
      expected += c;
      const prefix = expected;
      // Prompt flushing: the client has this chunk before the worker sends the next one.
      await x.waitForText((text) => text.length >= prefix.length);
      expect(x.receivedText()).toBe(prefix);
    }
    const head = await x.response;
    expect(head.statusCode).toBe(200);
    expect(String(head.headers['content-type'])).toMatch(/^text\/event-stream/);
    w.complete(req.request_id, { status: 200, token_counts: { prompt_tokens: 3, completion_tokens: 4, total_tokens: 7 } });
    const res = await x.done;
    expect(res.aborted).toBe(false);
    expect(res.body.equals(Buffer.from(expected, 'utf8'))).toBe(true);
  });

  test('many small chunks keep their order', async () => {
    const model = uniqueModel('order');
    const w = await scope.worker({ models: [model] });
    const x = scope.post('/v1/chat/completions', chatBody(model, { stream: true }));
    const req = await w.nextRequest();
    let expected = '';
    for (let i = 0; i < 200; i++) {
      const c = `data: {"i":${i}}\n\n`;
      expected += c;
      w.chunk(req.request_id, c);
    }
    w.complete(req.request_id, { status: 200 });
    const res = await x.done;
    expect(res.text).toBe(expected);
  });

  test('a streaming request whose backend fails first (response_complete 4xx, no chunks) reaches the client as that 4xx', async () => {
    const model = uniqueModel('stream4xx');
    const w = await scope.worker({ models: [model] });
    const x = scope.post('/v1/chat/completions', chatBody(model, { stream: true }));
    const req = await w.nextRequest();
    const body = '{"error":{"message":"max_tokens is too large","type":"invalid_request_error","code":"context_length_exceeded"}}';
    w.complete(req.request_id, { status: 400, headers: { 'content-type': 'application/json', 'x-backend': 'vllm' }, body });
    const res = await x.done;
    expect(res.status).toBe(400);
    expect(String(res.headers['content-type'])).toMatch(/^application\/json/);
    expect(res.headers['x-backend']).toBe('vllm');
    expect(res.text).toBe(body);
  });

  test('a streaming request whose backend answers 5xx first reaches the client as that 5xx', async () => {
    const model = uniqueModel('stream5xx');
    const w = await scope.worker({ models: [model] });
    const x = scope.post('/v1/chat/completions', chatBody(model, { stream: true }));
    const req = await w.nextRequest();
    const body = '{"error":{"message":"CUDA out of memory","type":"server_error"}}';
    w.complete(req.request_id, { status: 503, headers: { 'content-type': 'application/json' }, body });
    const res = await x.done;
    expect(res.status).toBe(503);
    expect(res.text).toBe(body);
  });

  test('an established stream stays SSE-shaped: a stream larger than the size ceiling ends with an SSE error event and nothing after', async () => {
    const model = uniqueModel('huge');
    const w = await scope.worker({ models: [model] });
    const x = scope.post('/v1/chat/completions', chatBody(model, { stream: true }));
    const req = await w.nextRequest();
    const limit = target().maxStreamBytes;
    const piece = `data: {"pad":"${'x'.repeat(Math.min(16 * 1024, Math.max(1024, Math.floor(limit / 8))))}"}\n\n`;
    const first = piece;
    w.chunk(req.request_id, first);
    await x.waitForText((t) => t.length >= first.length);
    let sent = first.length;
    while (sent <= limit + piece.length && w.isOpen) {
      w.chunk(req.request_id, piece);
      sent += piece.length;
    }
    const res = await x.done;
    expect(res.status).toBe(200);
    expect(res.body.length).toBeLessThan(sent);
    const events = parseSse(res.text);
    const last = events[events.length - 1];
    expect(last.event).toBe('error');
    expect(sseErrorCode(last.data)).toBe('stream_too_large');
    expect(events.filter((e) => e.event === 'error')).toHaveLength(1);
    // Everything before the error is an untouched prefix of what the worker sent.
    const beforeError = res.text.slice(0, res.text.lastIndexOf('event: error'));
    expect(beforeError.startsWith(first)).toBe(true);
  });
});

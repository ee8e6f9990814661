import { Errors, GatewayError } from '../common/gateway-error';
import type { ResponseSink } from '../dispatch/relay-request';
import type { DialectCodec, Json } from './dialect-codec';
import { TranslatingSink, TRANSLATED_HEADER } from './translating-sink';
import { CountTokensTranslation, ESTIMATE_HEADER, RequestTranslation } from './request-translation';

/** What the client's connection saw: headers added, the stream or whole answer, in order. */
class ClientSink implements ResponseSink {
  clientGone = false;
  readonly pendingBytes = 0;
  readonly events: unknown[] = [];
  readonly headers: Record<string, string> = {};
  startStream(status?: number, headers?: Record<string, string>) {
    this.events.push(['start', status, headers]);
  }
  writeChunk(chunk: string) {
    this.events.push(['chunk', chunk]);
    return true;
  }
  onDrain() {}
  abort() {}
  endStream() {
    this.events.push(['end']);
  }
  sendComplete(status: number, headers: Record<string, string>, body: string | readonly string[]) {
    this.events.push(['complete', status, headers, body]);
  }
  fail(error: GatewayError) {
    this.events.push(['fail', error.code]);
  }
  routed() {}
  queueWaited() {}
  addHeaders(h: Record<string, string>) {
    Object.assign(this.headers, h);
  }
}

/** A toy dialect: answers are `{said: <content>}`, stream events one `said:` line per chat delta. */
const codec: DialectCodec = {
  kind: 'anthropic-messages',
  endpoint: '/v1/chat/completions',
  toChat: (body: Json) =>
    Array.isArray(body.messages) ? { body: { messages: body.messages, stream: false }, dropped: ['metadata'] } : Errors.invalidRequest('messages'),
  fromChat: (chat: Json, ctx) => ({ said: (chat.choices as Array<{ message: { content: string } }>)[0].message.content, model: ctx.model }),
  errorFromChat: (status, body) => ({ type: 'error', status, backend: body.slice(0, 20) }),
  stream: () => {
    let buffered = '';
    return {
      push(text: string) {
        buffered += text;
        const lines = buffered.split('\n');
        buffered = lines.pop()!;
        return lines
          .filter((l) => l.startsWith('data: {'))
          .map((l) => `said: ${(JSON.parse(l.slice(6)) as { d: string }).d}\n`)
          .join('');
      },
      end: () => 'done\n',
    };
  },
};

const ctx = { model: 'claude-x', request: {} };

describe('TranslatingSink', () => {
  it('starts the client stream only when the translation has output, however the backend cut its lines', () => {
    const client = new ClientSink();
    const sink = new TranslatingSink(client, codec, ctx, 'anthropic-messages');
    sink.startStream(200, { 'content-type': 'text/event-stream', 'x-request-id': 'b1' });
    expect(sink.writeChunk('data: {"d":"he')).toBe(true);
    expect(client.events).toEqual([]);
    sink.writeChunk('llo"}\n\ndata: {"d":"!"}\n');
    sink.endStream();
    expect(client.headers[TRANSLATED_HEADER]).toBe('anthropic-messages');
    expect(client.events).toEqual([['start', 200, { 'x-request-id': 'b1' }], ['chunk', 'said: hello\nsaid: !\n'], ['chunk', 'done\n'], ['end']]);
  });

  it("a backend error on a stream (status ≥ 400, or JSON where SSE was expected) is one whole error in the client's dialect", () => {
    const client = new ClientSink();
    const sink = new TranslatingSink(client, codec, ctx, 'anthropic-messages');
    sink.startStream(400, { 'content-type': 'application/json' });
    sink.writeChunk('{"error":{"message":"bad"}}');
    sink.endStream();
    expect(client.events).toEqual([
      ['complete', 400, { 'content-type': 'application/json' }, JSON.stringify({ type: 'error', status: 400, backend: '{"error":{"message":' })],
    ]);
    const legacy = new ClientSink();
    const noStart = new TranslatingSink(legacy, codec, ctx, 'anthropic-messages');
    noStart.startStream();
    noStart.writeChunk('{"error":"no such route"}');
    noStart.endStream();
    expect(legacy.events.map((e) => (e as unknown[]).slice(0, 2))).toEqual([['complete', 502]]);
    // The worker's completion tells the backend's status: a 400 stays a 400.
    const told = new ClientSink();
    const withStatus = new TranslatingSink(told, codec, ctx, 'anthropic-messages');
    withStatus.startStream();
    withStatus.writeChunk('{"error":"prompt is too long"}');
    withStatus.endStream(400);
    expect(told.events.map((e) => (e as unknown[]).slice(0, 2))).toEqual([['complete', 400]]);
  });

  it('translates whole answers, keeps backend headers that do not describe the body, and maps errors and non-JSON', () => {
    const client = new ClientSink();
    new TranslatingSink(client, codec, ctx, undefined).sendComplete(200, { 'content-type': 'application/json', 'content-length': '99', 'x-request-id': 'b2' }, [
      '{"choices":[{"message":',
      '{"content":"hi"}}]}',
    ]);
    expect(client.events).toEqual([['complete', 200, { 'x-request-id': 'b2', 'content-type': 'application/json' }, '{"said":"hi","model":"claude-x"}']]);
    expect(client.headers).toEqual({}); // not announced
    const bad = new ClientSink();
    new TranslatingSink(bad, codec, ctx, 'x').sendComplete(200, {}, 'not json');
    expect(bad.events.map((e) => (e as unknown[]).slice(0, 2))).toEqual([['complete', 502]]);
    const err = new ClientSink();
    new TranslatingSink(err, codec, ctx, 'x').sendComplete(503, {}, 'overloaded');
    expect(err.events).toEqual([
      ['complete', 503, { 'content-type': 'application/json' }, JSON.stringify({ type: 'error', status: 503, backend: 'overloaded' })],
    ]);
  });
});

describe('TranslatingSink.fail', () => {
  it("a started stream ends with the dialect's own failure events; before the start, the client's error answer", () => {
    const failing: DialectCodec = { ...codec, stream: () => ({ ...codec.stream!(ctx), fail: (e) => `failed: ${e.code} ${e.status}\n` }) };
    const client = new ClientSink();
    const sink = new TranslatingSink(client, failing, ctx, 'openai-responses');
    sink.startStream(200);
    sink.writeChunk('data: {"d":"x"}\n');
    sink.fail(Errors.requestTimeout());
    expect(client.events.slice(1)).toEqual([['chunk', 'said: x\n'], ['chunk', 'failed: request_timeout 504\n'], ['end']]);
    const early = new ClientSink();
    const before = new TranslatingSink(early, failing, ctx, 'openai-responses');
    before.startStream(200);
    before.fail(Errors.requestTimeout());
    expect(early.events).toEqual([['fail', 'request_timeout']]);
  });
});

describe('RequestTranslation', () => {
  it('translates once, sets the served model per worker, and hands out a fresh translating sink or the client own', () => {
    const client = new ClientSink();
    const t = new RequestTranslation(codec, { messages: [{ role: 'user', content: 'x' }], metadata: {} }, false, 'claude-x', client, 'c1');
    expect(t.prepare()).toBeUndefined();
    expect(JSON.parse(t.bodyFor('qwen'))).toEqual({ messages: [{ role: 'user', content: 'x' }], stream: false, model: 'qwen' });
    expect(JSON.parse(t.bodyFor('llama')).model).toBe('llama');
    expect(t.sinkFor(false)).toBe(client);
    const a = t.sinkFor(true);
    expect(a).toBeInstanceOf(TranslatingSink);
    expect(t.sinkFor(true)).not.toBe(a);
    const bad = new RequestTranslation(codec, { messages: 'no' }, false, 'm', client, 'c2');
    expect(bad.prepare()?.code).toBe('invalid_request');
    expect(bad.prepare()?.code).toBe('invalid_request');
  });

  it("count_tokens without any worker: the gateway's estimate, marked as one", () => {
    const client = new ClientSink();
    const t = new CountTokensTranslation(codec, { messages: [] }, 'm', client, 'c3', () => 42);
    expect(t.answerWithout()).toBe(true);
    expect(client.events).toEqual([['complete', 200, { 'content-type': 'application/json' }, '{"input_tokens":42}']]);
    expect(client.headers).toEqual({ [ESTIMATE_HEADER]: 'true' });
    client.clientGone = true;
    expect(t.answerWithout()).toBe(false);
  });

  it('count_tokens sent natively: a backend without the route (404, 405, 501) gets the estimate answered for it; any other answer passes', () => {
    for (const status of [404, 405, 501]) {
      const client = new ClientSink();
      new CountTokensTranslation(codec, { messages: [] }, 'm', client, 'c4', () => 7).sinkFor(false).sendComplete(status, {}, '{"error":"not found"}');
      expect(client.events).toEqual([['complete', 200, { 'content-type': 'application/json' }, '{"input_tokens":7}']]);
      expect(client.headers).toEqual({ [ESTIMATE_HEADER]: 'true' });
    }
    const client = new ClientSink();
    new CountTokensTranslation(codec, { messages: [] }, 'm', client, 'c5', () => 7).sinkFor(false).sendComplete(200, { 'x-b': '1' }, '{"input_tokens":9}');
    expect(client.events).toEqual([['complete', 200, { 'x-b': '1' }, '{"input_tokens":9}']]);
    expect(client.headers).toEqual({});
  });
});

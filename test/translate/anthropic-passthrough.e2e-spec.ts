import { ResponsesEnv, startResponsesEnv } from './support/responses-env';

/**
 * A backend that serves the Anthropic Messages API itself (llama-server and vLLM both can) gets it
 * untranslated: the client's bytes reach it as sent, its bytes reach the client as sent, and no
 * translation header is added.
 */
describe('Anthropic Messages pass-through to a backend that serves /v1/messages', () => {
  let env: ResponsesEnv;

  beforeAll(async () => {
    // Not chat-only: the worker's probe finds /v1/messages served and advertises it.
    env = await startResponsesEnv({ chatOnly: false });
  });

  afterAll(async () => {
    await env?.close();
  });

  // Claude Code's request shape, spaced and ordered as a client might: nothing in it may be rewritten.
  const clientBody = (stream: boolean) =>
    `{"model": "llama3", "max_tokens": 1024, "system": [{"type": "text", "text": "You are Claude Code.", "cache_control": {"type": "ephemeral"}}], "messages": [{"role": "user", "content": [{"type":"text","text":"Grüße 🌍"}]}], "tools": [{"name": "Bash", "input_schema": {"type": "object", "properties": {}}}], "thinking": {"type": "adaptive"}, "metadata": {"user_id": "u"}, "stream": ${stream}}`;

  async function post(body: string): Promise<Response> {
    return fetch(`${env.gw.url}/v1/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'anthropic-version': '2023-06-01' },
      body,
    });
  }

  it('relays a whole answer byte for byte both ways', async () => {
    const answer =
      '{"id":"msg_native","type":"message","role":"assistant","model":"llama3","content":[{"type":"text","text":"Grüße 🌍"}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":3,"output_tokens":2}}';
    env.backend.enqueue({ kind: 'status', status: 200, body: answer });
    const sent = clientBody(false);
    const res = await post(sent);
    expect(res.status).toBe(200);
    expect(await res.text()).toBe(answer);
    expect(res.headers.get('x-switchboard-translated')).toBeNull();
    const relayed = env.backend.relayed[env.backend.relayed.length - 1];
    expect(relayed.path).toBe('/v1/messages');
    expect(relayed.body).toBe(sent);
  });

  it('relays a streamed answer byte for byte both ways', async () => {
    const events =
      'event: message_start\ndata: {"type":"message_start","message":{"id":"msg_native","type":"message","role":"assistant","model":"llama3","content":[],"stop_reason":null,"usage":{"input_tokens":3,"output_tokens":0}}}\n\n' +
      'event: content_block_start\ndata: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}\n\n' +
      'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Grüße 🌍"}}\n\n' +
      'event: content_block_stop\ndata: {"type":"content_block_stop","index":0}\n\n' +
      'event: message_delta\ndata: {"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":2}}\n\n' +
      'event: message_stop\ndata: {"type":"message_stop"}\n\n';
    // Cut every 7 bytes: some cuts land inside the multi-byte characters.
    const bytes = Buffer.from(events);
    const pieces: Buffer[] = [];
    for (let i = 0; i < bytes.length; i += 7) pieces.push(bytes.subarray(i, i + 7));
    env.backend.enqueue({ kind: 'raw-stream', pieces, delayMs: 0, then: 'end' });
    const sent = clientBody(true);
    const res = await post(sent);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toContain('text/event-stream');
    expect(res.headers.get('x-switchboard-translated')).toBeNull();
    expect(await res.text()).toBe(events);
    const relayed = env.backend.relayed[env.backend.relayed.length - 1];
    expect(relayed.path).toBe('/v1/messages');
    expect(relayed.body).toBe(sent);
  });
});

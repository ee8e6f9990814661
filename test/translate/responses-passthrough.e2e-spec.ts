import { ResponsesEnv, startResponsesEnv } from './support/responses-env';

/**
 * A backend that serves the Responses API itself gets it untranslated: the client's bytes reach it as
 * sent, and its bytes reach the client as it sent them, with no translation header.
 */
describe('Responses API pass-through to a backend that serves /v1/responses', () => {
  let env: ResponsesEnv;

  beforeAll(async () => {
    env = await startResponsesEnv({ chatOnly: false });
  });

  afterAll(async () => {
    await env?.close();
  });

  // Codex's request shape, spaced and ordered as a client might: nothing in it may be rewritten.
  const clientBody = (stream: boolean) =>
    `{"model": "llama3", "instructions": "You are Codex.", "input": [{"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "<permissions>"}]}, {"type":"message","role":"user","content":[{"type":"input_text","text":"Grüße 🌍"}]}], "tools": [{"type": "function", "name": "shell", "parameters": {"type": "object", "properties": {}}, "strict": false}], "reasoning": {"effort": "medium", "summary": "auto"}, "store": false, "include": ["reasoning.encrypted_content"], "prompt_cache_key": "conv-1", "stream": ${stream}}`;

  async function post(body: string): Promise<Response> {
    return fetch(`${env.gw.url}/v1/responses`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
  }

  it('relays a whole answer byte for byte both ways', async () => {
    const answer =
      '{"id":"resp_native","object":"response","status":"completed","model":"llama3","output":[],"usage":{"input_tokens":3,"output_tokens":0,"total_tokens":3}}';
    env.backend.enqueue({ kind: 'status', status: 200, body: answer });
    const sent = clientBody(false);
    const res = await post(sent);
    expect(res.status).toBe(200);
    expect(await res.text()).toBe(answer);
    expect(res.headers.get('x-switchboard-translated')).toBeNull();
    const relayed = env.backend.relayed[env.backend.relayed.length - 1];
    expect(relayed.path).toBe('/v1/responses');
    expect(relayed.body).toBe(sent);
  });

  it('relays a streamed answer byte for byte both ways', async () => {
    const events =
      'event: response.created\ndata: {"type":"response.created","sequence_number":0,"response":{"id":"resp_native","status":"in_progress"}}\n\n' +
      'event: response.output_text.delta\ndata: {"type":"response.output_text.delta","sequence_number":1,"delta":"Grüße 🌍"}\n\n' +
      'event: response.completed\ndata: {"type":"response.completed","sequence_number":2,"response":{"id":"resp_native","status":"completed"}}\n\n';
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
    expect(relayed.path).toBe('/v1/responses');
    expect(relayed.body).toBe(sent);
  });
});

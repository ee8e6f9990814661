import * as http from 'node:http';
import { AddressInfo, Socket } from 'node:net';
import { CLOSE_MS, START_MS, withDeadline } from '../../support/deadline';

/**
 * A small OpenAI/Anthropic-compatible inference server on a real loopback port, scriptable per
 * request. By default it answers like llama-server: /v1/models, /v1/chat/completions (JSON or
 * SSE), /v1/messages (Anthropic shape) and /v1/responses, all with usage numbers.
 */

export interface Usage {
  prompt: number;
  completion: number;
}

/** What the next request gets instead of the default answer. */
export type Behaviour =
  /** A plain answer with this status and body (e.g. a 429). */
  | { kind: 'status'; status: number; body: string; headers?: Record<string, string> }
  /**
   * Writes `pieces` one by one (raw bytes, so multi-byte characters can be cut), `delayMs` apart,
   * then ends, destroys the socket (failure mid-stream) or hangs until the client goes away.
   */
  | { kind: 'raw-stream'; pieces: Buffer[]; delayMs: number; then: 'end' | 'destroy' | 'hang'; status?: number; headers?: Record<string, string> }
  /** Never answers; the request stays open until the client closes it. */
  | { kind: 'hang' }
  /** Answers normally, after a delay. */
  | { kind: 'slow'; delayMs: number }
  /** Answers normally once `until` resolves: the test decides when, no timing involved. */
  | { kind: 'gated'; until: Promise<void> };

export interface RecordedRequest {
  method: string;
  path: string;
  /** The query string without '?', '' when none. */
  query: string;
  /** One of the worker's own probe requests (a `routes` entry or a POST {}), not a relayed one. */
  probe: boolean;
  headers: http.IncomingHttpHeaders;
  body: string;
  /** Resolves when the request's connection closes before the answer was fully sent. */
  closedEarly: Promise<void>;
  /** Resolves when the connection of this request closes (for whatever reason). */
  socketClosed: Promise<void>;
}

export const DEFAULT_USAGE: Usage = { prompt: 11, completion: 7 };

/** What a probe route answers: a JSON document (or raw text), a stream of JSON lines, or a network-level failure. */
export type ProbeAnswer =
  | { status: number; json?: unknown; text?: string }
  /** NDJSON (Ollama's progress streams): one line per value, written as the iterable yields them. */
  | { status: number; ndjson: AsyncIterable<unknown> }
  /** Never answers. */
  | 'hang'
  /** Drops the connection without an answer. */
  | 'destroy';

export type ProbeRoute = (req: { path: string; query: URLSearchParams; body: string; headers: http.IncomingHttpHeaders }) => ProbeAnswer;

/** Endpoints the fake serves by default: POST {} to them gets 400 like a real server's validation. */
const SERVED_ENDPOINTS = new Set(['/v1/chat/completions', '/v1/messages', '/v1/responses']);

export function openAiChatSse(text: string, model: string, usage: Usage = DEFAULT_USAGE): string {
  const base = { id: 'chatcmpl-1', object: 'chat.completion.chunk', created: 1, model };
  const events: unknown[] = [{ ...base, choices: [{ index: 0, delta: { role: 'assistant', content: '' }, finish_reason: null }] }];
  for (const word of splitWords(text)) {
    events.push({ ...base, choices: [{ index: 0, delta: { content: word }, finish_reason: null }] });
  }
  events.push({ ...base, choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] });
  events.push({
    ...base,
    choices: [],
    usage: { prompt_tokens: usage.prompt, completion_tokens: usage.completion, total_tokens: usage.prompt + usage.completion },
  });
  return events.map((e) => `data: ${JSON.stringify(e)}\n\n`).join('') + 'data: [DONE]\n\n';
}

export function anthropicSse(text: string, model: string, usage: Usage = DEFAULT_USAGE): string {
  const ev = (name: string, data: unknown) => `event: ${name}\ndata: ${JSON.stringify(data)}\n\n`;
  let out = ev('message_start', {
    type: 'message_start',
    message: { id: 'msg_1', type: 'message', role: 'assistant', model, content: [], usage: { input_tokens: usage.prompt, output_tokens: 1 } },
  });
  out += ev('content_block_start', { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } });
  for (const word of splitWords(text)) {
    out += ev('content_block_delta', { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: word } });
  }
  out += ev('content_block_stop', { type: 'content_block_stop', index: 0 });
  out += ev('message_delta', { type: 'message_delta', delta: { stop_reason: 'end_turn' }, usage: { output_tokens: usage.completion } });
  out += ev('message_stop', { type: 'message_stop' });
  return out;
}

export function responsesSse(text: string, model: string, usage: Usage = DEFAULT_USAGE): string {
  const ev = (name: string, data: unknown) => `event: ${name}\ndata: ${JSON.stringify(data)}\n\n`;
  let out = ev('response.created', { type: 'response.created', response: { id: 'resp_1', status: 'in_progress', model } });
  for (const word of splitWords(text)) out += ev('response.output_text.delta', { type: 'response.output_text.delta', delta: word });
  out += ev('response.completed', {
    type: 'response.completed',
    response: { id: 'resp_1', status: 'completed', model, usage: responsesUsage(usage) },
  });
  return out;
}

function responsesUsage(u: Usage) {
  return { input_tokens: u.prompt, output_tokens: u.completion, total_tokens: u.prompt + u.completion };
}

function splitWords(text: string): string[] {
  return text.match(/\S+\s*|\s+/g) ?? [];
}

/** A gate for the `gated` behaviour: `until` resolves when the test calls `open()`. */
export function gate(): { until: Promise<void>; open: () => void } {
  let open!: () => void;
  const until = new Promise<void>((resolve) => (open = resolve));
  return { until, open };
}

export class FakeBackend {
  models: string[] = ['llama3'];
  /** When true, GET /v1/models answers 503. */
  modelsFailing = false;
  /** Extra fields for each /v1/models entry (e.g. vLLM's max_model_len). */
  modelEntry: (id: string) => Record<string, unknown> = () => ({ owned_by: 'fake' });
  /**
   * Routes of inference servers other than the OpenAI API ("GET /props", "POST /api/show" …). A key
   * ending in "/*" ("POST /slots/*") answers every path under it that has no route of its own.
   */
  readonly routes = new Map<string, ProbeRoute>();
  /** What POST {} gets per endpoint path; default 400 for the endpoints served, 404 for others. */
  endpointProbe: Record<string, ProbeAnswer> = {};
  replyText = 'Hello from the fake backend!';
  usage: Usage = DEFAULT_USAGE;
  readonly requests: RecordedRequest[] = [];
  /** Currently open relayed (non-/v1/models) requests. */
  inFlight = 0;
  maxInFlightSeen = 0;

  private readonly behaviours: Behaviour[] = [];
  private readonly socketCloses = new WeakMap<Socket, Promise<void>>();
  private readonly waiters: Array<{ count: number; resolve: () => void }> = [];
  private server?: http.Server;

  get port(): number {
    return (this.server?.address() as AddressInfo).port;
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  /** The next relayed request (not /v1/models) gets this behaviour instead of the default. */
  enqueue(behaviour: Behaviour): this {
    this.behaviours.push(behaviour);
    return this;
  }

  /** Relayed requests received so far (excludes /v1/models and probes). */
  get relayed(): RecordedRequest[] {
    return this.requests.filter((r) => r.path !== '/v1/models' && !r.probe);
  }

  /** The worker's probe requests received so far. */
  get probes(): RecordedRequest[] {
    return this.requests.filter((r) => r.probe);
  }

  /** Resolves once `count` relayed requests have arrived. */
  waitForRelayed(count: number): Promise<RecordedRequest> {
    return new Promise((resolve) => {
      const check = () => this.relayed.length >= count;
      if (check()) return resolve(this.relayed[count - 1]);
      this.waiters.push({ count, resolve: () => resolve(this.relayed[count - 1]) });
    });
  }

  async start(): Promise<void> {
    this.server = http.createServer((req, res) => void this.handle(req, res));
    await withDeadline(new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve)), START_MS, 'the fake backend did not start listening');
  }

  async close(): Promise<void> {
    if (!this.server) return;
    this.server.closeAllConnections();
    await withDeadline(new Promise<void>((resolve) => this.server!.close(() => resolve())), CLOSE_MS, 'the fake backend did not close');
  }

  private async handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    req.socket.setNoDelay(true);
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const body = Buffer.concat(chunks).toString('utf8');
    const [path, query = ''] = (req.url ?? '/').split('?');
    const route = this.routes.get(`${req.method} ${path}`) ?? this.prefixRoute(`${req.method} ${path}`);
    const endpointProbe = req.method === 'POST' && body.trim() === '{}';
    let markClosedEarly!: () => void;
    const closedEarly = new Promise<void>((r) => (markClosedEarly = r));
    res.on('close', () => {
      if (!res.writableFinished) markClosedEarly();
    });
    const socketClosed = this.closeOf(req.socket);
    // The worker only ever relays POSTs: any GET but /v1/models is one of its probes.
    const unknownGet = req.method === 'GET' && path !== '/v1/models' && route === undefined;
    const probe = route !== undefined || endpointProbe || unknownGet;
    this.requests.push({ method: req.method ?? '', path, query, probe, headers: req.headers, body, closedEarly, socketClosed });

    if (route) return this.answerProbe(res, route({ path, query: new URLSearchParams(query), body, headers: req.headers }));
    if (unknownGet) return this.answerProbe(res, { status: 404, json: { error: { message: 'File Not Found', type: 'not_found_error' } } });
    if (endpointProbe) {
      const answer =
        this.endpointProbe[path] ??
        (SERVED_ENDPOINTS.has(path)
          ? { status: 400, json: { error: { message: "'messages' is required", type: 'invalid_request_error' } } }
          : { status: 404, json: { error: { message: 'File Not Found', type: 'not_found_error' } } });
      return this.answerProbe(res, answer);
    }
    if (req.method === 'GET' && path === '/v1/models') return this.answerModels(res);

    this.inFlight++;
    this.maxInFlightSeen = Math.max(this.maxInFlightSeen, this.inFlight);
    res.on('close', () => this.inFlight--);
    for (const w of this.waiters.splice(0)) {
      if (this.relayed.length >= w.count) w.resolve();
      else this.waiters.push(w);
    }

    const behaviour = this.behaviours.shift();
    if (behaviour?.kind === 'hang') return;
    if (behaviour?.kind === 'status') {
      res.writeHead(behaviour.status, { 'content-type': 'application/json', ...behaviour.headers });
      res.end(behaviour.body);
      return;
    }
    if (behaviour?.kind === 'raw-stream') return this.rawStream(res, behaviour);
    if (behaviour?.kind === 'slow') await sleep(behaviour.delayMs);
    if (behaviour?.kind === 'gated') await behaviour.until;
    if (res.destroyed) return;

    let parsed: { model?: string; stream?: boolean } = {};
    try {
      parsed = JSON.parse(body) as typeof parsed;
    } catch {
      res.writeHead(400, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: { message: 'body is not JSON', type: 'invalid_request_error' } }));
      return;
    }
    const model = parsed.model ?? 'unknown';
    if (path === '/v1/chat/completions') {
      if (parsed.stream) return this.sse(res, openAiChatSse(this.replyText, model, this.usage));
      return this.json(res, {
        id: 'chatcmpl-1',
        object: 'chat.completion',
        created: 1,
        model,
        choices: [{ index: 0, message: { role: 'assistant', content: this.replyText }, finish_reason: 'stop' }],
        usage: { prompt_tokens: this.usage.prompt, completion_tokens: this.usage.completion, total_tokens: this.usage.prompt + this.usage.completion },
      });
    }
    if (path === '/v1/messages') {
      if (parsed.stream) return this.sse(res, anthropicSse(this.replyText, model, this.usage));
      return this.json(res, {
        id: 'msg_1',
        type: 'message',
        role: 'assistant',
        model,
        content: [{ type: 'text', text: this.replyText }],
        stop_reason: 'end_turn',
        usage: { input_tokens: this.usage.prompt, output_tokens: this.usage.completion },
      });
    }
    if (path === '/v1/responses') {
      if (parsed.stream) return this.sse(res, responsesSse(this.replyText, model, this.usage));
      return this.json(res, {
        id: 'resp_1',
        object: 'response',
        status: 'completed',
        model,
        output: [{ type: 'message', role: 'assistant', content: [{ type: 'output_text', text: this.replyText }] }],
        usage: responsesUsage(this.usage),
      });
    }
    res.writeHead(404, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ error: { message: `no route ${path}`, type: 'not_found' } }));
  }

  private answerModels(res: http.ServerResponse): void {
    if (this.modelsFailing) {
      res.writeHead(503, { 'content-type': 'application/json' });
      res.end('{"error":"loading model"}');
      return;
    }
    this.json(res, { object: 'list', data: this.models.map((id) => ({ id, object: 'model', created: 1, ...this.modelEntry(id) })) });
  }

  /** One promise per connection: a keep-alive socket carries many requests (a lifecycle poll loop, dozens). */
  private closeOf(socket: Socket): Promise<void> {
    let closed = this.socketCloses.get(socket);
    if (!closed) {
      closed = new Promise<void>((r) => (socket.destroyed ? r() : socket.once('close', () => r())));
      this.socketCloses.set(socket, closed);
    }
    return closed;
  }

  private prefixRoute(key: string): ProbeRoute | undefined {
    for (const [pattern, route] of this.routes) {
      if (pattern.endsWith('/*') && key.startsWith(pattern.slice(0, -1))) return route;
    }
    return undefined;
  }

  private answerProbe(res: http.ServerResponse, answer: ProbeAnswer): void {
    if (answer === 'hang') return;
    if (answer === 'destroy') {
      res.socket?.destroy();
      return;
    }
    if ('ndjson' in answer) {
      void this.ndjson(res, answer.status, answer.ndjson);
      return;
    }
    const text = answer.text ?? JSON.stringify(answer.json ?? {});
    res.writeHead(answer.status, { 'content-type': answer.text === undefined ? 'application/json' : 'text/plain' });
    res.end(text);
  }

  private json(res: http.ServerResponse, doc: unknown): void {
    res.writeHead(200, { 'content-type': 'application/json', 'x-backend': 'fake' });
    res.end(JSON.stringify(doc));
  }

  private async ndjson(res: http.ServerResponse, status: number, lines: AsyncIterable<unknown>): Promise<void> {
    res.writeHead(status, { 'content-type': 'application/x-ndjson' });
    res.flushHeaders();
    for await (const line of lines) {
      if (res.destroyed) return;
      res.write(`${JSON.stringify(line)}\n`);
    }
    res.end();
  }

  /** Writes each SSE event separately, as real servers flush token by token. */
  private async sse(res: http.ServerResponse, text: string): Promise<void> {
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', 'x-backend': 'fake' });
    for (const event of text.split(/(?<=\n\n)/)) {
      if (res.destroyed) return;
      res.write(event);
      await sleep(1);
    }
    res.end();
  }

  private async rawStream(res: http.ServerResponse, b: Extract<Behaviour, { kind: 'raw-stream' }>): Promise<void> {
    res.writeHead(b.status ?? 200, { 'content-type': 'text/event-stream', ...b.headers });
    res.flushHeaders();
    for (const piece of b.pieces) {
      if (res.destroyed) return;
      res.write(piece);
      await sleep(b.delayMs);
    }
    if (b.then === 'end') res.end();
    else if (b.then === 'destroy') res.socket?.destroy();
    // 'hang': leave it open; the client's abort closes it.
  }
}

/** Text of at least `minBytes` UTF-8 bytes mixing 1- to 4-byte characters, quotes, backslashes and newlines. */
export function multiByteText(minBytes: number): string {
  const unit = 'Grüße aus Köln — 日本語のテキスト 🚀🌍 ñandú "zitiert" \\ back\\slash\n';
  return unit.repeat(Math.ceil(minBytes / Buffer.byteLength(unit)));
}

/** Cuts bytes into pieces of `size`, which lands many cuts inside multi-byte characters. */
export function cutBytes(text: string, size: number): Buffer[] {
  const bytes = Buffer.from(text, 'utf8');
  const pieces: Buffer[] = [];
  for (let i = 0; i < bytes.length; i += size) pieces.push(bytes.subarray(i, i + size));
  return pieces;
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

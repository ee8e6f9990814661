import * as http from 'node:http';
import { AddressInfo } from 'node:net';
import { CLOSE_MS, START_MS, withDeadline } from '../../support/deadline';

/** One request the backend received (the worker daemon relayed it). */
export interface BackendCall {
  /** Which backend (its worker's name). */
  backend: string;
  /** The client's tag: the content of its first message. */
  tag: string;
  stream: boolean;
  /** Bytes of the answer were sent (a stream's head and first chunk count). */
  started: boolean;
  /** The whole answer was written. */
  finished: boolean;
  /** The connection closed before the answer was whole (the worker aborted it). */
  abandoned: boolean;
}

/** What the backend does with a call: answer it, or hold it (a stream after its first chunk) until release(). */
export type Policy = (call: BackendCall) => 'answer' | 'hold';

/** The answer's text for a tag: a client checks it got exactly this, once. */
export const answerText = (tag: string) => `answer to ${tag} in five words`;

const STREAM_GAP_MS = 5;

/**
 * A small OpenAI chat backend for real worker daemons, one per daemon, that keeps what it
 * received (by the client's tag) and what it answered in full: the failover tests compare that
 * with what clients saw (no request answered twice, none lost). Streams are sent word by word.
 */
export class MockBackend {
  readonly calls: BackendCall[] = [];
  policy: Policy = () => 'answer';
  private readonly held = new Set<() => void>();
  private readonly policyHeld = new Set<BackendCall>();
  private server?: http.Server;

  constructor(
    readonly name: string,
    readonly models: string[],
  ) {}

  get url(): string {
    return `http://127.0.0.1:${(this.server!.address() as AddressInfo).port}`;
  }

  /** Calls held right now. */
  get holding(): BackendCall[] {
    return this.calls.filter((c) => !c.finished && !c.abandoned && this.policyHeld.has(c));
  }

  async start(): Promise<void> {
    this.server = http.createServer((req, res) => void this.handle(req, res));
    this.server.keepAliveTimeout = 60_000;
    await withDeadline(new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve)), START_MS, 'mock backend did not listen');
  }

  /** Lets every held call go on (and every later one be answered). */
  releaseAll(): void {
    this.policy = () => 'answer';
    for (const go of [...this.held]) go();
    this.held.clear();
  }

  async close(): Promise<void> {
    if (!this.server) return;
    this.releaseAll();
    this.server.closeAllConnections();
    await withDeadline(new Promise<void>((resolve) => this.server!.close(() => resolve())), CLOSE_MS, 'mock backend did not close');
  }

  private async handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    if (req.method === 'GET' && req.url?.startsWith('/v1/models')) {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ object: 'list', data: this.models.map((id) => ({ id, object: 'model', owned_by: 'mock' })) }));
      return;
    }
    let body: { model?: string; stream?: boolean; messages?: Array<{ content?: string }> };
    try {
      body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as typeof body;
    } catch {
      res.writeHead(400, { 'content-type': 'application/json' });
      res.end('{"error":{"message":"not JSON"}}');
      return;
    }
    const call: BackendCall = {
      backend: this.name,
      tag: String(body.messages?.[0]?.content ?? ''),
      stream: body.stream === true,
      started: false,
      finished: false,
      abandoned: false,
    };
    this.calls.push(call);
    res.on('close', () => {
      if (!res.writableFinished) call.abandoned = true;
    });
    const hold = this.policy(call) === 'hold';
    if (hold) this.policyHeld.add(call);
    const words = answerText(call.tag).split(/(?<= )/);
    const model = body.model ?? 'unknown';
    if (!call.stream) {
      if (hold) await this.waitRelease(res);
      if (res.destroyed) return;
      call.started = true;
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({
          id: 'c1',
          object: 'chat.completion',
          model,
          choices: [{ index: 0, message: { role: 'assistant', content: words.join('') }, finish_reason: 'stop' }],
        }),
      );
      call.finished = true;
      return;
    }
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    call.started = true;
    for (let i = 0; i < words.length; i++) {
      if (res.destroyed) return;
      res.write(`data: ${JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', model, choices: [{ index: 0, delta: { content: words[i] } }] })}\n\n`);
      if (i === 0 && hold) await this.waitRelease(res);
      else await sleep(STREAM_GAP_MS);
    }
    if (res.destroyed) return;
    res.end('data: [DONE]\n\n');
    call.finished = true;
  }

  private waitRelease(res: http.ServerResponse): Promise<void> {
    return new Promise<void>((resolve) => {
      const go = () => {
        this.held.delete(go);
        resolve();
      };
      this.held.add(go);
      res.once('close', go);
    });
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

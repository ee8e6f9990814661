import { writeFileSync } from 'node:fs';
import * as http from 'node:http';
import { AddressInfo, Socket } from 'node:net';
import { join } from 'node:path';
import { CLOSE_MS, START_MS, withDeadline } from '../../support/deadline';
import { AgentTask, chatTurn, messagesTurn, responsesTurn, Turn } from './agent-turns';
import { chatJson, chatSse, messagesJson, messagesSse, responsesJson, responsesSse } from './agent-wire';

/**
 * An inference server on a loopback port that plays the model for one agent task (agent-turns.ts).
 * `chat-only` serves only `/v1/chat/completions` (the worker's endpoint probe finds the other two
 * absent, so the gateway must translate); `native` also speaks Anthropic Messages and Responses
 * itself, so the agents' own requests reach it untouched.
 */
export type BackendMode = 'chat-only' | 'native';

export interface ReceivedRequest {
  path: string;
  /** The parsed body (undefined when it was not a JSON object). */
  body: Record<string, unknown> | undefined;
  /** What the backend answered: a tool call or the final text. */
  turn: Turn;
}

/** The model the worker serves; the gateway's aliases map the agents' model ids onto it. */
export const LOCAL_MODEL = 'local-coder';

interface Dialect {
  turn(body: Record<string, unknown>, task: AgentTask): Turn;
  json(turn: Turn, model: string): unknown;
  sse(turn: Turn, model: string): string;
}

/** Chat completions and Messages decide only function turns, so their renderers only get those. */
const DIALECTS = {
  '/v1/chat/completions': { turn: chatTurn, json: chatJson, sse: chatSse },
  '/v1/messages': { turn: messagesTurn, json: messagesJson, sse: messagesSse },
  '/v1/responses': { turn: responsesTurn, json: responsesJson, sse: responsesSse },
} as Record<string, Dialect>;

export class ScriptedBackend {
  /** Every inference request, in arrival order (the worker's endpoint probes, POST {}, are left out). */
  readonly received: ReceivedRequest[] = [];
  /** The task the next requests are answered for; set by the test before it runs an agent. */
  task: AgentTask | undefined;
  private server?: http.Server;
  private readonly sockets = new Set<Socket>();
  url = '';

  constructor(readonly mode: BackendMode) {}

  async start(): Promise<void> {
    this.server = http.createServer((req, res) => this.handle(req, res));
    this.server.on('connection', (s: Socket) => {
      this.sockets.add(s);
      s.on('close', () => this.sockets.delete(s));
    });
    await withDeadline(new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve)), START_MS, 'the scripted backend did not start listening');
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  async close(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    if (this.server) await withDeadline(new Promise((resolve) => this.server!.close(resolve)), CLOSE_MS, 'the scripted backend did not close');
  }

  /** The paths inference requests arrived on, e.g. ['/v1/chat/completions', '/v1/chat/completions']. */
  paths(): string[] {
    return this.received.map((r) => r.path);
  }

  private handle(req: http.IncomingMessage, res: http.ServerResponse): void {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      try {
        this.answer(req, Buffer.concat(chunks).toString('utf8'), res);
      } catch (e) {
        // A bug here must show up as the agent's failure, not as a hung request.
        send(res, 500, { error: { message: `scripted backend: ${(e as Error).message}` } });
      }
    });
  }

  private answer(req: http.IncomingMessage, raw: string, res: http.ServerResponse): void {
    const path = (req.url ?? '/').split('?')[0];
    if (req.method === 'GET' && path === '/v1/models') {
      return send(res, 200, { object: 'list', data: [{ id: LOCAL_MODEL, object: 'model', owned_by: 'test' }] });
    }
    const dialect = DIALECTS[path];
    // No such route here: 404 with no word about a model, which the worker's probe reads as "absent".
    if (req.method !== 'POST' || !dialect || (this.mode === 'chat-only' && path !== '/v1/chat/completions')) {
      return send(res, 404, { error: 'no route' });
    }
    const body = parseObject(raw);
    // The worker's endpoint probe (POST {}): a validation error like a real server's, so the route counts as present.
    if (!body || body.model === undefined) return send(res, 400, { error: { message: 'model is required' } });
    if (!this.task) return send(res, 500, { error: { message: 'scripted backend: no task set' } });
    const turn = dialect.turn(body, this.task);
    this.received.push({ path, body, turn });
    // AGENTS_DUMP_DIR=/some/dir keeps what the agents sent, to see what a new CLI version changed.
    const dump = process.env.AGENTS_DUMP_DIR;
    if (dump) writeFileSync(join(dump, `${Date.now()}-${this.mode}${path.replace(/\//g, '_')}.json`), JSON.stringify({ headers: req.headers, body }, null, 2));
    const model = typeof body.model === 'string' ? body.model : LOCAL_MODEL;
    if (body.stream === true) {
      res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
      res.end(dialect.sse(turn, model));
      return;
    }
    send(res, 200, dialect.json(turn, model));
  }
}

function send(res: http.ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
}

function parseObject(raw: string): Record<string, unknown> | undefined {
  try {
    const v: unknown = JSON.parse(raw);
    return typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

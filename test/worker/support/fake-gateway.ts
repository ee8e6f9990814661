import * as http from 'node:http';
import * as https from 'node:https';
import { AddressInfo } from 'node:net';
import WebSocket, { WebSocketServer } from 'ws';
import { CLOSE_MS, START_MS, WAIT_MS as CLOSED_MS, withDeadline } from '../../support/deadline';

/**
 * Plays the gateway's side of the worker protocol on a real loopback port: checks the secret
 * header, acks registrations, and lets a test send frames and wait for the worker's answers.
 */

// Frames are kept loosely typed: the tests assert exact wire shapes.

export type Frame = Record<string, any>;

const WAIT_MS = 10_000;

export class GatewayConnection {
  readonly frames: Frame[] = [];
  readonly rawFrames: string[] = [];
  private readonly closedUnbounded: Promise<{ code: number; reason: string }>;
  private readonly consumed = new Set<number>();
  private waiters: Array<() => void> = [];

  constructor(
    readonly ws: WebSocket,
    readonly request: http.IncomingMessage,
  ) {
    ws.on('message', (data) => {
      const text = (data as Buffer).toString('utf8');
      this.rawFrames.push(text);
      this.frames.push(JSON.parse(text) as Frame);
      for (const w of this.waiters.splice(0)) w();
    });
    this.closedUnbounded = new Promise((resolve) => ws.on('close', (code, reason) => resolve({ code, reason: reason.toString() })));
  }

  get secretHeader(): string | undefined {
    return this.request.headers['x-worker-secret'] as string | undefined;
  }

  /** The next not-yet-taken frame of `type` ('*' = any) matching `match`, waiting for it if needed. */
  next(type: string, match: (f: Frame) => boolean = () => true): Promise<Frame> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiters = this.waiters.filter((w) => w !== check);
        reject(new Error(`no "${type}" frame within ${WAIT_MS} ms; frames so far: ${JSON.stringify(this.frames)}`));
      }, WAIT_MS);
      const check = () => {
        const i = this.frames.findIndex((f, idx) => !this.consumed.has(idx) && (type === '*' || f.type === type) && match(f));
        if (i === -1) {
          this.waiters.push(check);
          return;
        }
        this.consumed.add(i);
        clearTimeout(timer);
        resolve(this.frames[i]);
      };
      check();
    });
  }

  /** All frames for one request id, in order. */
  framesFor(requestId: string): Frame[] {
    return this.frames.filter((f) => f.request_id === requestId);
  }

  /** Waits for the request's final frame (response_complete or error). */
  final(requestId: string): Promise<Frame> {
    return this.next('*', (f) => f.request_id === requestId && (f.type === 'response_complete' || f.type === 'error')).catch(() =>
      Promise.reject(new Error(`request ${requestId} got no final frame; frames: ${JSON.stringify(this.framesFor(requestId))}`)),
    );
  }

  send(frame: Frame | string): void {
    this.ws.send(typeof frame === 'string' ? frame : JSON.stringify(frame));
  }

  /** Resolves when the worker's WebSocket closes; fails with a message if not within CLOSED_MS of the await. */
  get closed(): Promise<{ code: number; reason: string }> {
    return withDeadline(this.closedUnbounded, CLOSED_MS, "the worker's WebSocket to the fake gateway was not closed");
  }

  close(code: number, reason: string): Promise<{ code: number; reason: string }> {
    this.ws.close(code, reason);
    return this.closed;
  }
}

export interface FakeGatewayOptions {
  secret: string;
  /** Send register_ack on register (default true). */
  autoAck?: boolean;
  ackWarnings?: string[];
  /** Serve wss:// with this certificate. */
  tls?: { key: string; cert: string };
}

export class FakeGateway {
  readonly connections: GatewayConnection[] = [];
  /** Every upgrade attempt, accepted or not. */
  readonly attempts: Array<{ secret?: string; url: string }> = [];
  private server?: http.Server;
  private wss?: WebSocketServer;
  private connectionWaiters: Array<() => void> = [];
  private port_ = 0;
  /** Warnings put into the next register_acks. */
  ackWarnings?: string[];
  /** Features accepted in the next register_acks (the real gateway answers the subset it speaks). */
  ackFeatures?: string[];
  /** While set, every upgrade is completed and then closed with this code and reason (like the gateway's refusals). */
  rejectWith?: { code: number; reason: string };

  constructor(private readonly options: FakeGatewayOptions) {
    this.ackWarnings = options.ackWarnings;
  }

  get port(): number {
    return this.port_;
  }

  get url(): string {
    return `${this.options.tls ? 'https' : 'http'}://127.0.0.1:${this.port_}`;
  }

  async start(port = 0): Promise<void> {
    this.wss = new WebSocketServer({ noServer: true });
    const notFound = (_req: http.IncomingMessage, res: http.ServerResponse) => {
      res.writeHead(404);
      res.end();
    };
    this.server = this.options.tls ? https.createServer(this.options.tls, notFound) : http.createServer(notFound);
    this.server.on('upgrade', (req, socket, head) => {
      const url = req.url ?? '';
      if (!url.startsWith('/v1/worker/connect')) {
        socket.end('HTTP/1.1 404 Not Found\r\n\r\n');
        return;
      }
      const secret = req.headers['x-worker-secret'] as string | undefined;
      this.attempts.push({ secret, url });
      this.wss!.handleUpgrade(req, socket, head, (ws) => {
        if (this.rejectWith) {
          ws.close(this.rejectWith.code, this.rejectWith.reason);
          return;
        }
        if (secret !== this.options.secret) {
          // Like the real gateway: finish the upgrade, then close with the contract's reason.
          ws.close(1008, 'worker authentication failed');
          return;
        }
        const conn = new GatewayConnection(ws, req);
        this.connections.push(conn);
        if (this.options.autoAck !== false) {
          ws.once('message', (data) => {
            const reg = JSON.parse((data as Buffer).toString('utf8')) as Frame;
            if (reg.type !== 'register') return;
            conn.send({
              type: 'register_ack',
              worker_id: `w-${this.connections.length}`,
              models: reg.models,
              ...(this.ackWarnings ? { warnings: this.ackWarnings } : {}),
              protocol_version: reg.protocol_version,
              ...(this.ackFeatures ? { features: this.ackFeatures } : {}),
            });
          });
        }
        for (const w of this.connectionWaiters.splice(0)) w();
      });
    });
    await withDeadline(
      new Promise<void>((resolve, reject) => {
        this.server!.once('error', reject);
        this.server!.listen(port, '127.0.0.1', () => resolve());
      }),
      START_MS,
      'the fake gateway did not start listening',
    );
    this.port_ = (this.server.address() as AddressInfo).port;
  }

  /** Resolves with connection number `n` (1-based) once it exists. */
  connection(n: number): Promise<GatewayConnection> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`worker did not connect ${n} time(s) within ${WAIT_MS} ms`)), WAIT_MS);
      const check = () => {
        if (this.connections.length >= n) {
          clearTimeout(timer);
          resolve(this.connections[n - 1]);
        } else this.connectionWaiters.push(check);
      };
      check();
    });
  }

  /** Resolves once `n` upgrade attempts (including rejected ones) were made. */
  async waitForAttempts(n: number): Promise<void> {
    for (let i = 0; i < 1000 && this.attempts.length < n; i++) await new Promise((r) => setTimeout(r, 10));
    if (this.attempts.length < n) throw new Error(`only ${this.attempts.length} connection attempts, wanted ${n}`);
  }

  /** Goes away like a crashed gateway: sockets dropped, port closed. */
  async stop(): Promise<void> {
    for (const c of this.wss?.clients ?? []) c.terminate();
    this.wss?.close();
    if (!this.server) return;
    this.server.closeAllConnections();
    await withDeadline(new Promise<void>((resolve) => this.server!.close(() => resolve())), CLOSE_MS, 'the fake gateway did not close');
    this.server = undefined;
  }
}

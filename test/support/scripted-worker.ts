import WebSocket from 'ws';
import { TEST_SECRET } from './gateway';
import { WAIT_MS, withDeadline } from './deadline';

let workerSeq = 0;

type Frame = Record<string, any> & { type: string };

export interface ScriptedWorkerOptions {
  provider?: string;
  secret?: string | null;
  /** Send the secret as the legacy `worker_secret` query parameter instead of the header. */
  secretInQuery?: string;
  headers?: Record<string, string>;
  /** Certificates to trust for a wss:// gateway (a self-signed one in tests). */
  ca?: string;
}

export interface CloseInfo {
  code: number;
  reason: string;
}

/**
 * A real WebSocket worker driven step by step by a test: it records every frame the gateway
 * sends and lets the test answer with exact protocol frames.
 */
export class ScriptedWorker {
  readonly frames: Frame[] = [];
  private readonly closedUnbounded: Promise<CloseInfo>;
  private waiters: Array<{ match: (f: Frame) => boolean; resolve: (f: Frame) => void; seen: number }> = [];
  private closeInfo: CloseInfo | undefined;
  private constructor(readonly ws: WebSocket) {
    this.closedUnbounded = new Promise((resolve) =>
      ws.on('close', (code, reason) => {
        this.closeInfo = { code, reason: reason.toString() };
        resolve(this.closeInfo);
      }),
    );
    ws.on('message', (data) => {
      const frame = JSON.parse(data.toString()) as Frame;
      this.frames.push(frame);
      this.waiters = this.waiters.filter((w) => {
        if (!w.match(frame)) return true;
        w.resolve(frame);
        return false;
      });
    });
    ws.on('error', () => undefined);
  }

  /** Resolves when the WebSocket closes; fails with a message if that has not happened within WAIT_MS of the await. */
  get closed(): Promise<CloseInfo> {
    return withDeadline(this.closedUnbounded, WAIT_MS, "the scripted worker's WebSocket was not closed");
  }

  static async connect(workerUrl: string, options: ScriptedWorkerOptions = {}): Promise<ScriptedWorker> {
    const url = new URL(workerUrl);
    if (options.provider) url.searchParams.set('provider', options.provider);
    if (options.secretInQuery) url.searchParams.set('worker_secret', options.secretInQuery);
    const headers: Record<string, string> = { ...options.headers };
    const secret = options.secret === undefined ? TEST_SECRET : options.secret;
    if (secret !== null && !options.secretInQuery) headers['x-worker-secret'] = secret;
    const ws = new WebSocket(url, { headers, ca: options.ca });
    const worker = new ScriptedWorker(ws);
    await withDeadline(
      new Promise<void>((resolve, reject) => {
        ws.once('open', () => resolve());
        ws.once('error', reject);
      }),
      WAIT_MS,
      `the scripted worker's WebSocket to ${url.pathname} did not open`,
    ).catch((e) => {
      ws.terminate();
      throw e;
    });
    return worker;
  }

  /** Connects and registers; resolves with the register_ack. */
  static async register(
    workerUrl: string,
    register: {
      models: string[];
      max_concurrent?: number;
      worker_name?: string;
      protocol_version?: string | null;
      current_load?: number;
      /** Switchboard extensions, sent only when given: per-model capabilities, endpoint paths, priority. */
      capabilities?: Record<string, Record<string, unknown>>;
      endpoints?: string[];
      priority?: number;
      /** Protocol extensions to ask for (`register.features`), sent only when given. */
      features?: string[];
      runner?: Record<string, unknown>;
      runner_capabilities?: Record<string, unknown>;
    },
    options: ScriptedWorkerOptions = {},
  ): Promise<{ worker: ScriptedWorker; ack: Frame }> {
    const worker = await ScriptedWorker.connect(workerUrl, options);
    const frame: Frame = {
      type: 'register',
      // Distinct by default: worker health (ejection) is kept per worker name.
      worker_name: register.worker_name ?? `scripted-${++workerSeq}`,
      models: register.models,
      max_concurrent: register.max_concurrent ?? 1,
      current_load: register.current_load ?? 0,
    };
    if (register.protocol_version !== null) frame.protocol_version = register.protocol_version ?? '2026-04-bridge-v1';
    if (register.capabilities !== undefined) frame.capabilities = register.capabilities;
    if (register.endpoints !== undefined) frame.endpoints = register.endpoints;
    if (register.priority !== undefined) frame.priority = register.priority;
    for (const key of ['features', 'runner', 'runner_capabilities'] as const) if (register[key] !== undefined) frame[key] = register[key];
    worker.send(frame);
    const ack = await worker.next('register_ack');
    return { worker, ack };
  }

  send(frame: Frame | string): void {
    this.ws.send(typeof frame === 'string' ? frame : JSON.stringify(frame));
  }

  /** The next frame of `type` (optionally matching) not yet consumed by an earlier `next` call. */
  next(type: string, match: (f: Frame) => boolean = () => true, timeoutMs = 10000): Promise<Frame> {
    const test = (f: Frame) => f.type === type && match(f) && !this.consumed.has(f);
    const existing = this.frames.find(test);
    if (existing) {
      this.consumed.add(existing);
      return Promise.resolve(existing);
    }
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no ${type} frame within ${timeoutMs} ms`)), timeoutMs);
      this.waiters.push({
        match: test,
        seen: this.frames.length,
        resolve: (f) => {
          clearTimeout(timer);
          this.consumed.add(f);
          resolve(f);
        },
      });
    });
  }
  private readonly consumed = new Set<Frame>();

  /** Whether an unconsumed frame of `type` has arrived. */
  has(type: string): boolean {
    return this.frames.some((f) => f.type === type && !this.consumed.has(f));
  }

  /**
   * The first of several workers to receive a `type` frame, and that frame. Polls instead of
   * racing `next()` calls, whose losing waiters would otherwise swallow later frames.
   */
  static async firstOf(workers: ScriptedWorker[], type: string, timeoutMs = 10000): Promise<{ worker: ScriptedWorker; frame: Frame }> {
    const until = Date.now() + timeoutMs;
    for (;;) {
      const worker = workers.find((w) => w.has(type));
      if (worker) return { worker, frame: await worker.next(type) };
      if (Date.now() > until) throw new Error(`no ${type} frame on any worker within ${timeoutMs} ms`);
      await new Promise((r) => setTimeout(r, 5));
    }
  }

  count(type: string): number {
    return this.frames.filter((f) => f.type === type).length;
  }

  complete(requestId: string, body: unknown, status = 200, extra: Record<string, unknown> = {}): void {
    this.send({
      type: 'response_complete',
      request_id: requestId,
      status_code: status,
      headers: { 'content-type': 'application/json' },
      body: typeof body === 'string' ? body : JSON.stringify(body),
      ...extra,
    });
  }

  chunk(requestId: string, chunk: string): void {
    this.send({ type: 'response_chunk', request_id: requestId, chunk });
  }

  get closeState(): CloseInfo | undefined {
    return this.closeInfo;
  }

  close(): void {
    this.ws.close();
  }

  /** Drops the TCP connection without a close frame (a crashed worker). */
  kill(): void {
    this.ws.terminate();
  }
}

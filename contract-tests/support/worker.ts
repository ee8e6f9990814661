import WebSocket from 'ws';
import { PROTOCOL_VERSION, target } from './target';

/** A JSON frame as received from the gateway. */
export type Frame = { type: string; [key: string]: any };

export interface CloseInfo {
  code: number;
  reason: string;
  /** Set when the upgrade itself was refused (no 101): e.g. "HTTP 401". */
  upgradeFailure?: string;
}

export interface ConnectOptions {
  /** Gateway worker endpoint; defaults to the suite's target. */
  wsUrl?: string;
  /** `?provider=`; default: the target's default provider; `null` omits the parameter. */
  provider?: string | null;
  /** `x-worker-secret` header; default: the target's worker secret; `null` sends no header. */
  secret?: string | null;
  /** Legacy `?worker_secret=` query value (sent in addition to the header unless `secret: null`). */
  querySecret?: string;
  /** Bind the client socket to this local address (e.g. 127.0.0.2) to appear as another peer IP. */
  localAddress?: string;
}

export interface RegisterOptions {
  models: string[];
  max_concurrent?: number;
  worker_name?: string;
  /** Protocol version; default: the current one; `null` omits the field (legacy worker). */
  protocol_version?: string | null;
  current_load?: number;
  /** Extra fields merged into the register frame. */
  extra?: Record<string, unknown>;
}

export interface CompleteOptions {
  status?: number;
  headers?: Record<string, string>;
  body?: string;
  token_counts?: { prompt_tokens?: number; completion_tokens?: number; total_tokens?: number };
}

interface Waiter {
  match: (f: Frame) => boolean;
  resolve: (f: Frame) => void;
  reject: (e: Error) => void;
  what: string;
  timer: NodeJS.Timeout;
}

const DEFAULT_WAIT_MS = 10_000;
let workerSeq = 0;

/**
 * A scripted worker: a real WebSocket client speaking the worker protocol, driven step by step by
 * a test. It records every frame the gateway sends, answers JSON pings with pongs (unless
 * `autoPong` is off) and lets the test send exact protocol frames.
 */
export class ScriptedWorker {
  /** Every frame received, in order. */
  readonly frames: Frame[] = [];
  /** Raw non-JSON / binary messages received (should stay empty). */
  readonly rawMessages: string[] = [];
  readonly closed: Promise<CloseInfo>;
  closeInfo: CloseInfo | undefined;
  /** The register_ack, once registered. */
  ack: Frame | undefined;
  /** Reply to each `ping` with `pong{current_load}`. */
  autoPong = true;
  /** Load reported in pongs; default: number of active (unanswered, uncancelled) requests. */
  reportedLoad: number | undefined;
  /** Request ids received and not yet completed or cancelled. */
  readonly active = new Set<string>();
  /** Count of pongs sent. */
  pongsSent = 0;
  private consumed = new Set<Frame>();
  private waiters: Waiter[] = [];
  private opened = false;

  private constructor(
    readonly ws: WebSocket,
    readonly label: string,
  ) {
    this.closed = new Promise((resolve) => {
      ws.on('close', (code, reason) => {
        this.closeInfo ??= { code, reason: reason.toString() };
        this.failWaiters();
        resolve(this.closeInfo);
      });
      ws.on('unexpected-response', (_req, res) => {
        this.closeInfo = { code: -1, reason: '', upgradeFailure: `HTTP ${res.statusCode}` };
        res.resume();
        this.failWaiters();
        resolve(this.closeInfo);
      });
    });
    ws.on('error', (e) => {
      if (!this.closeInfo && !this.opened) {
        this.closeInfo = { code: -1, reason: '', upgradeFailure: e.message };
        this.failWaiters();
      }
    });
    ws.on('message', (data, isBinary) => {
      const text = Array.isArray(data) ? Buffer.concat(data).toString() : Buffer.from(data as ArrayBuffer).toString();
      let frame: Frame;
      try {
        frame = JSON.parse(text);
        if (isBinary || !frame || typeof frame !== 'object' || typeof frame.type !== 'string') throw new Error('not a frame');
      } catch {
        this.rawMessages.push(text);
        return;
      }
      this.frames.push(frame);
      if (frame.type === 'ping' && this.autoPong) this.pong();
      if (frame.type === 'request') this.active.add(frame.request_id);
      if (frame.type === 'cancel') this.active.delete(frame.request_id);
      for (const w of [...this.waiters]) {
        if (!this.consumed.has(frame) && w.match(frame)) {
          this.consumed.add(frame);
          this.settleWaiter(w);
          w.resolve(frame);
        }
      }
    });
  }

  /**
   * Opens the WebSocket. Resolves once the upgrade completed (or failed: see `closeInfo`); a
   * rejected worker is closed by the gateway after the upgrade, observe that with `closed`.
   */
  static async connect(opts: ConnectOptions = {}, label = 'worker'): Promise<ScriptedWorker> {
    const t = target();
    const url = new URL(opts.wsUrl ?? t.wsUrl);
    const provider = opts.provider === undefined ? t.defaultProvider : opts.provider;
    if (provider !== null) url.searchParams.set('provider', provider);
    if (opts.querySecret !== undefined) url.searchParams.set('worker_secret', opts.querySecret);
    const headers: Record<string, string> = {};
    const secret = opts.secret === undefined ? (opts.querySecret !== undefined ? null : t.workerSecret) : opts.secret;
    if (secret !== null) headers['x-worker-secret'] = secret;
    const ws = new WebSocket(url, { headers, localAddress: opts.localAddress, handshakeTimeout: 10_000 });
    const worker = new ScriptedWorker(ws, label);
    await new Promise<void>((resolve) => {
      ws.once('open', () => {
        worker.opened = true;
        resolve();
      });
      ws.once('close', () => resolve());
      ws.once('unexpected-response', () => resolve());
      ws.once('error', () => resolve());
    });
    return worker;
  }

  /** Connects and registers; rejects (with the close code/reason) if the gateway refuses. */
  static async start(reg: RegisterOptions, opts: ConnectOptions = {}, label = 'worker'): Promise<ScriptedWorker> {
    const w = await ScriptedWorker.connect(opts, label);
    await w.register(reg);
    return w;
  }

  get isOpen(): boolean {
    return this.ws.readyState === WebSocket.OPEN;
  }

  get workerId(): string {
    if (!this.ack) throw new Error(`${this.label} is not registered`);
    return this.ack.worker_id as string;
  }

  send(frame: Record<string, unknown>): void {
    if (this.ws.readyState !== WebSocket.OPEN) return;
    this.ws.send(JSON.stringify(frame));
  }

  sendRaw(data: string | Buffer, binary = false): void {
    this.ws.send(data, { binary });
  }

  registerFrame(reg: RegisterOptions): Record<string, unknown> {
    const frame: Record<string, unknown> = {
      type: 'register',
      // Distinct by default: the gateway keeps worker health (ejection) per worker name.
      worker_name: reg.worker_name ?? `${this.label}-${++workerSeq}`,
      models: reg.models,
      max_concurrent: reg.max_concurrent ?? 4,
      current_load: reg.current_load ?? 0,
      ...(reg.extra ?? {}),
    };
    const version = reg.protocol_version === undefined ? PROTOCOL_VERSION : reg.protocol_version;
    if (version !== null) frame.protocol_version = version;
    return frame;
  }

  /** Sends `register` and resolves with `register_ack`. */
  async register(reg: RegisterOptions): Promise<Frame> {
    if (this.closeInfo) throw new Error(`${this.label} could not register: ${describeClose(this.closeInfo)}`);
    this.send(this.registerFrame(reg));
    this.ack = await this.next('register_ack');
    return this.ack;
  }

  pong(load?: number): void {
    this.pongsSent++;
    this.send({ type: 'pong', current_load: load ?? this.reportedLoad ?? this.active.size, timestamp_unix_ms: Date.now() });
  }

  modelsUpdate(models: string[], currentLoad?: number): void {
    this.send({ type: 'models_update', models, current_load: currentLoad ?? this.reportedLoad ?? this.active.size });
  }

  chunk(requestId: string, chunk: string): void {
    this.send({ type: 'response_chunk', request_id: requestId, chunk });
  }

  complete(requestId: string, opts: CompleteOptions = {}): void {
    this.active.delete(requestId);
    const frame: Record<string, unknown> = { type: 'response_complete', request_id: requestId, status_code: opts.status ?? 200 };
    if (opts.headers) frame.headers = opts.headers;
    if (opts.body !== undefined) frame.body = opts.body;
    frame.token_counts = opts.token_counts ?? { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 };
    this.send(frame);
  }

  /** Convenience: a 200 JSON response. */
  respondJson(requestId: string, body: unknown, status = 200): void {
    this.complete(requestId, { status, headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  }

  error(requestId: string | undefined, code: string, message: string): void {
    if (requestId) this.active.delete(requestId);
    this.send({ type: 'error', ...(requestId ? { request_id: requestId } : {}), code, message });
  }

  /**
   * Waits for the next not-yet-consumed frame matching `match` (received earlier or later).
   * `cancel` (if given) is filled with a function that withdraws the wait without consuming.
   */
  waitFor(match: (f: Frame) => boolean, what: string, timeoutMs = DEFAULT_WAIT_MS, cancel?: { fn?: () => void }): Promise<Frame> {
    const early = this.frames.find((f) => !this.consumed.has(f) && match(f));
    if (early) {
      this.consumed.add(early);
      return Promise.resolve(early);
    }
    if (this.closeInfo) {
      return Promise.reject(new Error(`${this.label}: connection closed (${describeClose(this.closeInfo)}) before ${what}; frames: ${this.summary()}`));
    }
    return new Promise<Frame>((resolve, reject) => {
      if (cancel) cancel.fn = () => this.settleWaiter(w);
      const w: Waiter = {
        match,
        resolve,
        reject,
        what,
        timer: setTimeout(() => {
          this.settleWaiter(w);
          reject(new Error(`${this.label}: timed out after ${timeoutMs} ms waiting for ${what}; frames: ${this.summary()}`));
        }, timeoutMs),
      };
      this.waiters.push(w);
    });
  }

  /** Next frame of `type` (optionally also matching `match`). */
  next(type: string, match: (f: Frame) => boolean = () => true, timeoutMs = DEFAULT_WAIT_MS): Promise<Frame> {
    return this.waitFor((f) => f.type === type && match(f), `a "${type}" frame`, timeoutMs);
  }

  nextRequest(timeoutMs = DEFAULT_WAIT_MS): Promise<Frame> {
    return this.next('request', () => true, timeoutMs);
  }

  /** All frames of `type` received so far (consumed or not). */
  all(type: string): Frame[] {
    return this.frames.filter((f) => f.type === type);
  }

  requests(): Frame[] {
    return this.all('request');
  }

  /** Normal close from the worker side. */
  close(code = 1000, reason = 'bye'): void {
    if (this.ws.readyState === WebSocket.OPEN || this.ws.readyState === WebSocket.CONNECTING) {
      try {
        this.ws.close(code, reason);
      } catch {
        this.ws.terminate();
      }
    }
  }

  /** Abrupt drop (TCP reset, no close frame): what a crashed worker looks like. */
  terminate(): void {
    this.ws.terminate();
  }

  summary(): string {
    const counts = new Map<string, number>();
    for (const f of this.frames) counts.set(f.type, (counts.get(f.type) ?? 0) + 1);
    return [...counts].map(([k, v]) => `${k}×${v}`).join(', ') || '(none)';
  }

  private settleWaiter(w: Waiter): void {
    clearTimeout(w.timer);
    this.waiters = this.waiters.filter((x) => x !== w);
  }

  private failWaiters(): void {
    for (const w of [...this.waiters]) {
      this.settleWaiter(w);
      w.reject(new Error(`${this.label}: connection closed (${describeClose(this.closeInfo!)}) while waiting for ${w.what}; frames: ${this.summary()}`));
    }
  }
}

/**
 * The first request (matching `match`) that reaches any of `workers`; the other workers' waits
 * are withdrawn so they do not swallow a later request.
 */
export async function firstRequest(
  workers: ScriptedWorker[],
  match: (f: Frame) => boolean = () => true,
  timeoutMs = DEFAULT_WAIT_MS,
): Promise<{ worker: ScriptedWorker; frame: Frame }> {
  const cancels = workers.map(() => ({}) as { fn?: () => void });
  try {
    return await new Promise((resolve, reject) => {
      let failures = 0;
      workers.forEach((w, i) =>
        w
          .waitFor((f) => f.type === 'request' && match(f), 'a request', timeoutMs, cancels[i])
          .then(
            (frame) => resolve({ worker: w, frame }),
            (e) => {
              if (++failures === workers.length) reject(e);
            },
          ),
      );
    });
  } finally {
    for (const c of cancels) c.fn?.();
  }
}

export function describeClose(c: CloseInfo): string {
  return c.upgradeFailure ? `upgrade failed: ${c.upgradeFailure}` : `close ${c.code} "${c.reason}"`;
}

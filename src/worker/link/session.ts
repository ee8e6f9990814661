import type { Socket } from 'node:net';
import WebSocket from 'ws';
import { WorkerToServerMessage, encodeMessage } from '../../protocol';
import { Clock, TimerHandle } from '../clock';

/** The timers that belong to one connection; all of them end with it. */
export type SessionTimer = 'idle' | 'poll' | 'runner' | 'drain' | 'close';

/** One WebSocket connection and the timers that belong to it. */
export class LinkSession {
  openedAt?: number;
  closed = false;
  draining = false;
  workerId?: string;
  /**
   * The endpoint list last advertised on this link (register, then each models_update that
   * carries one, as the gateway reads it); undefined = none sent = every inference endpoint.
   * Requests for anything else are refused without touching the backend.
   */
  advertisedEndpoints?: string[];
  /** Protocol extensions the gateway accepted in register_ack (none until then). */
  features: ReadonlySet<string> = new Set();
  /** Aborted when the link closes: the lifecycle operations it asked for have nobody to report to. */
  readonly operations = new AbortController();
  private readonly timers = new Map<SessionTimer, TimerHandle>();
  /** The TCP socket while this turn's frames are held on it to leave in one write (holdWrites). */
  private held: Socket | undefined;

  constructor(
    readonly ws: WebSocket,
    private readonly clock: Clock,
  ) {}

  get open(): boolean {
    return !this.closed && this.ws.readyState === WebSocket.OPEN;
  }

  get bufferedAmount(): number {
    return this.ws.bufferedAmount;
  }

  send(message: WorkerToServerMessage, onWritten?: () => void): boolean {
    if (!this.open) return false;
    this.holdWrites();
    this.ws.send(encodeMessage(message), onWritten ? () => onWritten() : undefined);
    return true;
  }

  /**
   * Frames sent in one turn of the event loop leave in one write. A backend's answer often arrives
   * in one read (headers, body and end: response_start, response_chunk, response_complete); written
   * one by one, each would be a system call here and a wake-up of the gateway (and, for a request
   * forwarded between replicas, of the replica that holds the client). The TCP socket is corked at
   * the first frame and written once this turn's input is handled (setImmediate runs right after the
   * I/O callbacks of the current loop iteration), so no frame waits for anything but its siblings.
   * ws keeps the socket in a private field; without it (another ws version) frames go one by one.
   * (The gateway reads it with common/ws-tcp-socket.ts; the daemon ships with src/worker and
   * src/protocol only, test/worker/cli.e2e-spec.ts, so it reads the field itself.)
   */
  private holdWrites(): void {
    if (this.held) return;
    const tcp = (this.ws as unknown as { _socket?: Socket })._socket;
    if (!tcp || typeof tcp.cork !== 'function') return;
    this.held = tcp;
    tcp.cork();
    setImmediate(() => this.writeHeld());
  }

  /** Writes the frames held for this turn now. */
  private writeHeld(): void {
    const tcp = this.held;
    this.held = undefined;
    tcp?.uncork();
  }

  /** Ends the connection at once (no close handshake); frames held for this turn are written first, not dropped. */
  terminate(): void {
    this.writeHeld();
    this.ws.terminate();
  }

  /** (Re)arms the named timer: an earlier one of that name is cancelled. */
  setTimer(name: SessionTimer, fn: () => void, ms: number): void {
    const previous = this.timers.get(name);
    if (previous) this.clock.clearTimeout(previous);
    this.timers.set(name, this.clock.setTimeout(fn, ms));
  }

  hasTimer(name: SessionTimer): boolean {
    return this.timers.has(name);
  }

  clearTimers(): void {
    for (const t of this.timers.values()) this.clock.clearTimeout(t);
  }

  /** Close handshake, with a watchdog: a peer that never answers must not keep us waiting for ws's 30 s default. */
  close(code: number, reason: string): void {
    this.ws.close(code, reason);
    this.closeWatchdog();
  }

  closeWatchdog(): void {
    if (this.hasTimer('close')) return;
    this.setTimer('close', () => this.terminate(), 3_000);
  }
}

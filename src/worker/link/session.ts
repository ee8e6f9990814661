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
    this.ws.send(encodeMessage(message), onWritten ? () => onWritten() : undefined);
    return true;
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
    this.setTimer('close', () => this.ws.terminate(), 3_000);
  }
}

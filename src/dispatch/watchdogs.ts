import { Logger } from '@nestjs/common';
import { Clock, TimerHandle } from '../common/clock';
import { Errors } from '../common/gateway-error';
import type { RoutingConfig } from '../config/sections/routing';
import type { Router } from '../routing/router.service';
import type { RequestObservers } from './observers/request-observers';
import type { RelayRequest } from './relay-request';
import type { RequestEnd } from './request-end';
import type { LeaseControl } from './response-frames';

/** What a watchdog caught: a worker silent after taking a request, or a started stream gone quiet. */
export type WatchdogKind = 'first_byte' | 'stream_idle';
export const WATCHDOG_KINDS: readonly WatchdogKind[] = ['first_byte', 'stream_idle'];

/**
 * Requests watched for one timeout, in the order they joined (a Map keeps insertion order): the
 * value is when each joined. A request's due time is its last activity plus the timeout, and its
 * last activity is never before it joined — so a sweep can stop at the first entry that joined
 * less than a timeout ago: every later one joined later still.
 */
class DueLine {
  private readonly joined = new Map<RelayRequest, number>();

  constructor(readonly timeoutMs: number) {}

  /** Joins (or rejoins, at the end) the line. */
  add(req: RelayRequest, now: number): void {
    this.joined.delete(req);
    this.joined.set(req, now);
  }

  delete(req: RelayRequest): boolean {
    return this.joined.delete(req);
  }

  /** The earliest moment an entry may be due (undefined when the line is empty). */
  nextCheck(): number | undefined {
    for (const at of this.joined.values()) return at + this.timeoutMs;
    return undefined;
  }

  /**
   * Takes out every request due at `now` by `lastActivity`. One that was active since it joined
   * moves to the end, joined anew at its last activity: it is looked at again a timeout later.
   */
  sweep(now: number, lastActivity: (req: RelayRequest) => number): RelayRequest[] {
    const due: RelayRequest[] = [];
    for (const [req, at] of this.joined) {
      if (at + this.timeoutMs > now) break;
      const active = lastActivity(req);
      this.joined.delete(req);
      if (active + this.timeoutMs <= now) due.push(req);
      else this.joined.set(req, active);
    }
    return due;
  }
}

/** What the watchdogs settings and the Dispatcher give them. */
export type WatchdogSettings = Pick<RoutingConfig, 'firstByteTimeoutMs' | 'streamIdleTimeoutMs'> & Partial<Pick<RoutingConfig, 'firstByteTimeoutMsByPool'>>;

/**
 * The first-byte and stall watchdogs (docs/routing.md#watchdogs). No timer per request: watched
 * requests wait in insertion-ordered lines, and one timer, armed for the earliest moment any of
 * them can be due, sweeps the lines. A request's hooks (assigned, first byte, chunk, end) only
 * add to or delete from a Map and write a timestamp.
 *
 * - First byte: a worker that has sent neither `response_start` nor a chunk nor a completion
 *   `firstByteTimeoutMs` after taking a request is sent `cancel` (`timeout`), charged a health
 *   failure, and the request goes to another worker (the usual requeue limit, its own deadline).
 * - Stall: a started stream with no chunk for `streamIdleTimeoutMs` is cancelled on its worker,
 *   charged a health failure, and ends for its client with a retriable `DECODE_TIMEOUT` error event.
 */
export class Watchdogs {
  private readonly log = new Logger('Watchdogs');
  /** First-byte lines by timeout (one per distinct value: the pools' overrides share them). */
  private readonly firstByteLines = new Map<number, DueLine>();
  private readonly idleLine: DueLine;
  private timer: TimerHandle | undefined;
  private timerAt = Infinity;
  /** Requests each watchdog caught since the gateway started (`/admin/stats`). */
  readonly counts: Record<WatchdogKind, number> = { first_byte: 0, stream_idle: 0 };

  constructor(
    private readonly settings: WatchdogSettings,
    private readonly clock: Clock,
    private readonly router: Pick<Router, 'failed'>,
    private readonly end: RequestEnd,
    private readonly observers: Pick<RequestObservers, 'cancelled' | 'watchdog'>,
    private readonly leases: LeaseControl,
  ) {
    this.idleLine = new DueLine(settings.streamIdleTimeoutMs);
  }

  /** A worker took the request: its first byte is awaited from now. */
  assigned(req: RelayRequest, now: number): void {
    // Tasks bring bounds of their own (they may wait and run far longer than an interactive request).
    if (req.timeouts) return;
    // The pool's own setting; the routing map is its deprecated alias (file only).
    const timeoutMs = req.provider.firstByteTimeoutMs ?? this.settings.firstByteTimeoutMsByPool?.get(req.provider.name) ?? this.settings.firstByteTimeoutMs;
    let line = this.firstByteLines.get(timeoutMs);
    if (!line) this.firstByteLines.set(timeoutMs, (line = new DueLine(timeoutMs)));
    req.watch = line;
    line.add(req, now);
    this.armFor(now + timeoutMs);
  }

  /**
   * The worker spoke (`response_start` or a chunk): the first time, the first-byte watch ends and
   * a stream is watched for stalls from now on; then each chunk only notes the time.
   */
  spoke(req: RelayRequest, now: number): void {
    req.lastChunkAt = now;
    if (req.timeouts) return;
    if (req.watch === this.idleLine) return;
    req.watch?.delete(req);
    req.watch = undefined;
    if (!req.isStreaming) return;
    req.watch = this.idleLine;
    this.idleLine.add(req, now);
    this.armFor(now + this.idleLine.timeoutMs);
  }

  /** The request left its worker (ended, requeued): nothing more to watch. */
  forget(req: RelayRequest): void {
    if (!req.watch) return;
    req.watch.delete(req);
    req.watch = undefined;
  }

  private armFor(at: number): void {
    if (at >= this.timerAt) return;
    if (this.timer) this.clock.clearTimeout(this.timer);
    this.timerAt = at;
    this.timer = this.clock.setTimeout(() => this.sweep(), Math.max(0, at - this.clock.now()));
  }

  private sweep(): void {
    this.timer = undefined;
    this.timerAt = Infinity;
    const now = this.clock.now();
    for (const line of this.firstByteLines.values()) {
      for (const req of line.sweep(now, (r) => r.assignedAt)) this.firstByteTimedOut(req, line.timeoutMs);
    }
    for (const req of this.idleLine.sweep(now, (r) => r.lastChunkAt)) this.streamStalled(req, this.idleLine.timeoutMs);
    let next = Infinity;
    for (const line of [...this.firstByteLines.values(), this.idleLine]) next = Math.min(next, line.nextCheck() ?? Infinity);
    if (next < Infinity) this.armFor(next);
  }

  private firstByteTimedOut(req: RelayRequest, timeoutMs: number): void {
    req.watch = undefined;
    const worker = req.worker;
    if (!worker || req.phase !== 'assigned') return;
    this.caught('first_byte', req, worker, timeoutMs);
    this.observers.cancelled('timeout');
    this.leases.cancelLease(req, 'timeout');
    this.router.failed(worker, 'first_byte_timeout');
    // Nothing reached the client: another worker may serve it (counts toward the requeue limit).
    (req.plan.avoid ??= new Set()).add(worker.id);
    this.leases.rescue(req);
  }

  private streamStalled(req: RelayRequest, timeoutMs: number): void {
    req.watch = undefined;
    const worker = req.worker;
    if (!worker || req.phase !== 'streaming') return;
    this.caught('stream_idle', req, worker, timeoutMs);
    this.observers.cancelled('timeout');
    this.leases.cancelLease(req, 'timeout');
    this.router.failed(worker, 'stream_idle_timeout');
    // Never an apparent success: the client hears a retriable DECODE_TIMEOUT (an SSE error event).
    this.end.fail(req, Errors.requestTimeout().with({ fields: { watchdog: 'stream_idle' } }));
  }

  private caught(kind: WatchdogKind, req: RelayRequest, worker: { id: string; name: string }, timeoutMs: number): void {
    this.counts[kind]++;
    this.observers.watchdog(kind, req);
    this.log.warn({
      msg: kind === 'first_byte' ? 'no first byte in time: request moved to another worker' : 'stream stalled: request ended',
      watchdog: kind,
      request_id: req.id,
      correlation_id: req.correlationId,
      worker_id: worker.id,
      worker_name: worker.name,
      timeout_ms: timeoutMs,
    });
  }
}

import { CloseCodes } from '../../protocol';
import { Clock } from '../clock';
import { Logger } from '../logger';
import { Backoff } from './backoff';

export interface ReconnectOptions {
  reconnectMinMs: number;
  reconnectMaxMs: number;
  /** A session that lasted this long resets the reconnect backoff. */
  stableSessionMs: number;
  restartReconnectMs: number;
  restartReconnectMaxMs: number;
  restartWindowMs: number;
  cordonRetryMs: number;
  cordonRetryMaxMs: number;
  random?: () => number;
}

export interface ReconnectDelay {
  delayMs: number;
  attempt: number;
  /** The short restart interval applies (the gateway closed with 1012). */
  restarting: boolean;
}

/**
 * How long to wait before the next dial: exponential backoff after failures, a short interval
 * while a restarting gateway (1012) comes back, a long flat wait after a cordon refusal (1013).
 */
export class ReconnectPolicy {
  private readonly backoff: Backoff;
  private readonly restartBackoff: Backoff;
  private readonly random: () => number;
  /** Refusals with 1013 in a row (reset once registered). */
  private cordonRefusals = 0;
  /** Set by a 1012 close: retry at the short restart interval until registered (or the window ends). */
  private restartingSince?: number;

  constructor(
    private readonly options: ReconnectOptions,
    private readonly clock: Clock,
    private readonly log: Logger,
  ) {
    this.backoff = new Backoff({ minMs: options.reconnectMinMs, maxMs: options.reconnectMaxMs, random: options.random });
    this.restartBackoff = new Backoff({
      minMs: options.restartReconnectMs,
      maxMs: options.restartReconnectMaxMs,
      jitter: 0.25,
      random: options.random,
    });
    this.random = options.random ?? Math.random;
  }

  get cordonRetryMs(): number {
    return this.options.cordonRetryMs;
  }

  get cordonRetryMaxMs(): number {
    return this.options.cordonRetryMaxMs;
  }

  /** A link closed; `openedAt` is unset when it never opened. */
  sessionEnded(code: number, openedAt: number | undefined): void {
    const lastedMs = openedAt ? this.clock.now() - openedAt : 0;
    if (lastedMs >= this.options.stableSessionMs) this.backoff.reset();
    if (code === CloseCodes.SERVICE_RESTART) {
      // A planned restart is no failure: start over from a short delay, not from where backoff was.
      this.backoff.reset();
      this.restartBackoff.reset();
      this.restartingSince = this.clock.now();
    } else if (openedAt !== undefined) {
      // The gateway answered (and said something else than "restarting"): it is back.
      this.restartingSince = undefined;
    }
  }

  registered(): void {
    this.restartingSince = undefined;
    this.cordonRefusals = 0;
  }

  next(): ReconnectDelay {
    if (this.restartingSince !== undefined && this.clock.now() - this.restartingSince > this.options.restartWindowMs) {
      this.log.warn('the restarting gateway has not come back; falling back to the normal reconnect backoff', {
        waited_ms: this.clock.now() - this.restartingSince,
      });
      this.restartingSince = undefined;
    }
    const restarting = this.restartingSince !== undefined;
    const backoff = restarting ? this.restartBackoff : this.backoff;
    const attempt = backoff.attempts + 1;
    return { delayMs: backoff.next(), attempt, restarting };
  }

  /**
   * Refused with 1013: an operator cordoned this worker's pool or name. Retrying sooner would only
   * be refused again, so wait a long, capped interval (no exponential growth, no loop) and try once.
   */
  nextAfterCordon(): ReconnectDelay {
    const attempt = ++this.cordonRefusals;
    const { cordonRetryMs, cordonRetryMaxMs } = this.options;
    const delayMs = Math.round(cordonRetryMs + (cordonRetryMaxMs - cordonRetryMs) * this.random());
    return { delayMs, attempt, restarting: false };
  }
}

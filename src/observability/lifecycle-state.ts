import { Injectable } from '@nestjs/common';

/**
 * Process-wide lifecycle flag. Set as soon as shutdown starts, so readiness turns 503 and new
 * client requests are refused while in-flight work drains.
 */
@Injectable()
export class LifecycleState {
  private shuttingDown = false;
  private unready = false;
  private readonly listeners: Array<() => void> = [];

  get isShuttingDown(): boolean {
    return this.shuttingDown;
  }

  /** Readiness says 503: shutdown has begun, or is about to (`SHUTDOWN_DELAY_SECS`: still serving meanwhile). */
  get isUnready(): boolean {
    return this.unready || this.shuttingDown;
  }

  /** SIGTERM with a shutdown delay: a load balancer should stop sending work here; work is still served. */
  beginUnready(): void {
    this.unready = true;
  }

  beginShutdown(): void {
    if (this.shuttingDown) return;
    this.shuttingDown = true;
    for (const l of this.listeners) l();
  }

  onShutdown(listener: () => void): void {
    this.listeners.push(listener);
  }
}

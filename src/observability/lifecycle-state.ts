import { Injectable } from '@nestjs/common';

/**
 * Process-wide lifecycle flag. Set as soon as shutdown starts, so readiness turns 503 and new
 * client requests are refused while in-flight work drains.
 */
@Injectable()
export class LifecycleState {
  private shuttingDown = false;
  private readonly listeners: Array<() => void> = [];

  get isShuttingDown(): boolean {
    return this.shuttingDown;
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

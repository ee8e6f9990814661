import { Logger } from '@nestjs/common';

/**
 * Runs background writes one after another, in the order they were asked for, so a worker's
 * "connected" row is always written before its heartbeat or "disconnected" update (a pool of
 * PostgreSQL connections could otherwise reorder them). Failures are logged, never thrown.
 * Bounded: while the database is unreachable, writes past `maxPending` are dropped (the stale
 * sweep and the next boot repair what they would have written).
 */
export class SerialWriteQueue {
  private tail: Promise<void> = Promise.resolve();
  private pending = 0;
  private droppedSinceWarning = 0;

  constructor(
    private readonly log: Logger,
    private readonly maxPending = 10_000,
  ) {}

  /** Returns false when the write was dropped because the queue is full. */
  enqueue(label: string, write: () => Promise<unknown>): boolean {
    if (this.pending >= this.maxPending) {
      if (this.droppedSinceWarning++ === 0) this.log.warn(`write queue full (${this.maxPending}); dropping worker record writes`);
      return false;
    }
    this.droppedSinceWarning = 0;
    this.pending++;
    this.tail = this.tail
      .then(write)
      .then(
        () => undefined,
        (e: unknown) => this.log.warn(`${label} failed: ${e instanceof Error ? e.message : String(e)}`),
      )
      .finally(() => {
        this.pending--;
      });
    return true;
  }

  get size(): number {
    return this.pending;
  }

  /** Resolves once every write enqueued so far, and any enqueued meanwhile, has finished. */
  async whenIdle(): Promise<void> {
    while (this.pending > 0) await this.tail;
  }
}

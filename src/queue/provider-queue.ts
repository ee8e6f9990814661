/** What the queue needs to know about a waiting request. */
export interface Queueable {
  readonly model: string;
  /** When the request first arrived; requeued requests keep their place by it. */
  readonly receivedAt: number;
}

/**
 * Bounded FIFO of requests waiting for a worker of one provider. Workers take the oldest request
 * *they can serve*, so a request for a model nobody free serves does not block the others.
 * Requeued requests go back in by arrival time, ahead of everything that arrived after them.
 */
export class ProviderQueue<T extends Queueable> {
  private items: T[] = [];

  get length(): number {
    return this.items.length;
  }

  push(item: T): void {
    this.items.push(item);
  }

  /** Puts a requeued request back where its original arrival time places it. */
  requeue(item: T): void {
    const i = this.items.findIndex((other) => other.receivedAt > item.receivedAt);
    if (i < 0) this.items.push(item);
    else this.items.splice(i, 0, item);
  }

  remove(item: T): boolean {
    const i = this.items.indexOf(item);
    if (i < 0) return false;
    this.items.splice(i, 1);
    return true;
  }

  /** Removes and returns the oldest item accepted by `canServe`. */
  takeFirst(canServe: (item: T) => boolean): T | undefined {
    const i = this.items.findIndex(canServe);
    if (i < 0) return undefined;
    return this.items.splice(i, 1)[0];
  }

  /** Empties the queue, returning what was waiting (oldest first). */
  clear(): T[] {
    const all = this.items;
    this.items = [];
    return all;
  }
}

/** What the queue needs to know about a waiting request. */
export interface Queueable {
  readonly model: string;
}

/**
 * Bounded FIFO of requests waiting for a worker of one provider. Workers take the oldest request
 * *they can serve*, so a request for a model nobody free serves does not block the others.
 * Requeued requests go to the front: they are older than anything that arrived since.
 */
export class ProviderQueue<T extends Queueable> {
  private items: T[] = [];

  get length(): number {
    return this.items.length;
  }

  push(item: T): void {
    this.items.push(item);
  }

  pushFront(item: T): void {
    this.items.unshift(item);
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

  /** 1-based position of an item, 0 when absent. */
  positionOf(item: T): number {
    return this.items.indexOf(item) + 1;
  }
}

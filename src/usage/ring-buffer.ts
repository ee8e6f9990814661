/**
 * A FIFO of at most `capacity` items in a fixed array: adding to a full buffer evicts the oldest
 * item, in O(1), so a slow consumer costs bounded memory and constant time per item.
 */
export class RingBuffer<T> {
  private readonly items: Array<T | undefined>;
  private head = 0;
  private count = 0;

  constructor(readonly capacity: number) {
    if (!Number.isInteger(capacity) || capacity < 1) throw new Error('RingBuffer capacity must be a positive integer');
    this.items = new Array<T | undefined>(capacity);
  }

  get size(): number {
    return this.count;
  }

  /** Appends `item`; returns true when the oldest item had to be evicted to make room. */
  push(item: T): boolean {
    const evicted = this.count === this.capacity;
    if (evicted) {
      this.items[this.head] = item;
      this.head = (this.head + 1) % this.capacity;
    } else {
      this.items[(this.head + this.count) % this.capacity] = item;
      this.count++;
    }
    return evicted;
  }

  /** Removes and returns up to `n` items from the front (oldest first). */
  take(n: number): T[] {
    const out: T[] = [];
    while (out.length < n && this.count > 0) {
      out.push(this.items[this.head] as T);
      this.items[this.head] = undefined;
      this.head = (this.head + 1) % this.capacity;
      this.count--;
    }
    return out;
  }

  /**
   * Puts `batch` (oldest first) back in front of everything, as if it had never been taken. What
   * does not fit is dropped from the batch's oldest end; returns how many items were dropped.
   */
  putBack(batch: T[]): number {
    let i = batch.length - 1;
    for (; i >= 0 && this.count < this.capacity; i--) {
      this.head = (this.head - 1 + this.capacity) % this.capacity;
      this.items[this.head] = batch[i];
      this.count++;
    }
    return i + 1;
  }
}

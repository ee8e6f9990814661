/**
 * A set of the last `max` ids added (oldest dropped first), for late-frame bookkeeping. A ring of
 * slots beside the set: adding past the bound replaces the oldest slot in O(1), with no iterator
 * allocated per request (a busy worker retires an id for every request it answers).
 */
export class BoundedIdSet {
  private readonly ids = new Set<string>();
  private readonly ring: (string | undefined)[];
  private next = 0;

  constructor(private readonly max: number) {
    this.ring = new Array<string | undefined>(max);
  }

  add(id: string): void {
    if (this.ids.has(id)) return;
    const oldest = this.ring[this.next];
    if (oldest !== undefined) this.ids.delete(oldest);
    this.ring[this.next] = id;
    this.next = (this.next + 1) % this.max;
    this.ids.add(id);
  }

  has(id: string): boolean {
    return this.ids.has(id);
  }

  get size(): number {
    return this.ids.size;
  }
}

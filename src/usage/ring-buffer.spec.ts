import { RingBuffer } from './ring-buffer';

describe('RingBuffer', () => {
  it('is first in, first out', () => {
    const b = new RingBuffer<number>(4);
    [1, 2, 3].forEach((n) => b.push(n));
    expect(b.take(2)).toEqual([1, 2]);
    b.push(4);
    b.push(5);
    expect(b.size).toBe(3);
    expect(b.take(10)).toEqual([3, 4, 5]);
    expect(b.take(1)).toEqual([]);
  });

  it('evicts the oldest item when full, and says so', () => {
    const b = new RingBuffer<number>(3);
    expect([1, 2, 3].map((n) => b.push(n))).toEqual([false, false, false]);
    expect(b.push(4)).toBe(true);
    expect(b.push(5)).toBe(true);
    expect(b.size).toBe(3);
    expect(b.take(3)).toEqual([3, 4, 5]);
  });

  it('puts a taken batch back in front, dropping its oldest items when there is no room', () => {
    const b = new RingBuffer<number>(4);
    [1, 2, 3].forEach((n) => b.push(n));
    const batch = b.take(2);
    b.push(4);
    expect(b.putBack(batch)).toBe(0);
    expect(b.take(4)).toEqual([1, 2, 3, 4]);

    [1, 2, 3].forEach((n) => b.push(n));
    const again = b.take(3);
    [4, 5, 6].forEach((n) => b.push(n));
    expect(b.putBack(again)).toBe(2); // room for one: 3 stays, 1 and 2 are dropped
    expect(b.take(4)).toEqual([3, 4, 5, 6]);
  });

  it('keeps its order across many wrap-arounds', () => {
    const b = new RingBuffer<number>(5);
    const seen: number[] = [];
    for (let i = 0; i < 100; i++) {
      b.push(i);
      if (i % 3 === 0) seen.push(...b.take(2));
    }
    seen.push(...b.take(5));
    for (let i = 1; i < seen.length; i++) expect(seen[i]).toBeGreaterThan(seen[i - 1]);
    expect(seen[seen.length - 1]).toBe(99);
  });

  it('refuses a capacity below one', () => {
    expect(() => new RingBuffer(0)).toThrow(/capacity/);
  });
});

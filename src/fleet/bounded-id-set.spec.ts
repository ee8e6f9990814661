import { BoundedIdSet } from './bounded-id-set';

describe('BoundedIdSet', () => {
  it('keeps the last `max` ids added and forgets the oldest first', () => {
    const s = new BoundedIdSet(3);
    for (const id of ['a', 'b', 'c']) s.add(id);
    expect(['a', 'b', 'c'].every((id) => s.has(id))).toBe(true);
    s.add('d');
    expect(s.has('a')).toBe(false);
    expect(['b', 'c', 'd'].every((id) => s.has(id))).toBe(true);
    expect(s.size).toBe(3);
  });

  it('adding an id it holds changes nothing (the oldest stays the oldest)', () => {
    const s = new BoundedIdSet(2);
    s.add('a');
    s.add('b');
    s.add('a');
    s.add('c');
    expect(s.has('a')).toBe(false);
    expect(s.has('b')).toBe(true);
    expect(s.has('c')).toBe(true);
  });

  it('stays bounded over many more ids than it keeps', () => {
    const s = new BoundedIdSet(1024);
    for (let i = 0; i < 100_000; i++) s.add(`r-${i}`);
    expect(s.size).toBe(1024);
    expect(s.has('r-99999')).toBe(true);
    expect(s.has('r-98975')).toBe(false);
    expect(s.has('r-98976')).toBe(true);
  });
});

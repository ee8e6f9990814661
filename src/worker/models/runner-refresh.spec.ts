import { sortedJson } from './runner-refresh';

describe('sortedJson (is the runner document unchanged?)', () => {
  it('ignores key order at every level, keeps array order and values', () => {
    const a = { b: 1, a: { d: 2, c: [1, { f: 1, e: 'x' }] } };
    const b = { a: { c: [1, { e: 'x', f: 1 }], d: 2 }, b: 1 };
    expect(sortedJson(a)).toBe(sortedJson(b));
    expect(sortedJson(a)).toBe('{"a":{"c":[1,{"e":"x","f":1}],"d":2},"b":1}');
    expect(sortedJson({ a: [1, 2] })).not.toBe(sortedJson({ a: [2, 1] }));
    expect(sortedJson({ a: null, b: true })).toBe('{"a":null,"b":true}');
  });
});

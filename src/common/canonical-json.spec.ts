import { canonicalJson, sha256Hex } from './canonical-json';

describe('canonicalJson', () => {
  it('sorts the keys of every object, at every level, and writes no whitespace', () => {
    expect(canonicalJson({ b: 1, a: { d: [3, { z: true, y: null }], c: 'x' } })).toBe('{"a":{"c":"x","d":[3,{"y":null,"z":true}]},"b":1}');
  });

  it('is the same text whatever order the keys were written in', () => {
    const one = JSON.parse('{"kind":"plan","content":{"steps":["a","b"],"owner":"me"},"tags":["x"]}');
    const other = JSON.parse('{"tags":["x"],"content":{"owner":"me","steps":["a","b"]},"kind":"plan"}');
    expect(canonicalJson(one)).toBe(canonicalJson(other));
  });

  it('keeps array order, which is data', () => {
    expect(canonicalJson([2, 1])).not.toBe(canonicalJson([1, 2]));
  });

  it('sorts keys by code unit (numeric-looking keys as strings), and writes strings and numbers as JSON does', () => {
    expect(canonicalJson({ 10: 'a', 9: 'b', B: 1, a: 2 })).toBe('{"10":"a","9":"b","B":1,"a":2}');
    expect(canonicalJson({ s: 'é"\n\u0000', n: 1e21, f: 0.1, neg: -0 })).toBe('{"f":0.1,"n":1e+21,"neg":0,"s":"é\\"\\n\\u0000"}');
  });

  it('leaves out members without a value, like JSON.stringify', () => {
    expect(canonicalJson({ a: undefined, b: 1 })).toBe('{"b":1}');
    expect(canonicalJson([undefined])).toBe('[null]');
  });

  it('refuses what JSON cannot hold instead of rewriting it', () => {
    expect(() => canonicalJson({ n: NaN })).toThrow(/NaN/);
    expect(() => canonicalJson({ n: Infinity })).toThrow(/Infinity/);
    expect(() => canonicalJson({ b: BigInt(1) })).toThrow(/bigint/);
    const cycle: Record<string, unknown> = {};
    cycle.self = cycle;
    expect(() => canonicalJson(cycle)).toThrow(/cycle/);
  });

  it('allows the same object twice when it is not a cycle', () => {
    const shared = { x: 1 };
    expect(canonicalJson({ a: shared, b: shared })).toBe('{"a":{"x":1},"b":{"x":1}}');
  });

  it('sha256Hex hashes the UTF-8 bytes, lower-case hex', () => {
    expect(sha256Hex('abc')).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
  });
});

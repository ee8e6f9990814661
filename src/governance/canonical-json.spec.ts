import { canonicalJson } from './canonical-json';

describe('canonicalJson', () => {
  it('sorts the keys of every object, nested ones and those inside arrays, and writes no whitespace', () => {
    const value = { signers: ['carol', 'alice'], operation: 'model-load', nested: { z: 1, a: { y: true, b: null } }, list: [{ d: 2, c: 1 }] };
    expect(canonicalJson(value)).toBe('{"list":[{"c":1,"d":2}],"nested":{"a":{"b":null,"y":true},"z":1},"operation":"model-load","signers":["carol","alice"]}');
  });

  it('gives one text whatever the key order the object was built in', () => {
    expect(canonicalJson({ b: 1, a: { d: 1, c: 2 } })).toBe(canonicalJson({ a: { c: 2, d: 1 }, b: 1 }));
  });

  it('escapes strings as JSON does and leaves out undefined members', () => {
    expect(canonicalJson({ s: 'say "hi"\n', u: undefined, n: 1745880000, é: 'ü' })).toBe('{"n":1745880000,"s":"say \\"hi\\"\\n","é":"ü"}');
  });
});

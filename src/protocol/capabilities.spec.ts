import { CAPABILITY_FIELDS, CAPABILITY_FLAGS, CapabilityBounds, declaredFor, readCapabilities } from './capabilities';
import { parseWorkerMessage } from './codec';
import { RegisterMessage } from './messages';
import { WorkerNumberBounds } from './number-bounds';

const MAX = WorkerNumberBounds.contextLength;
const HINT: CapabilityBounds = { contextLength: MAX, numbers: 'hint' };
const CLAMPED: CapabilityBounds = { contextLength: MAX, numbers: 'clamped' };
const EXACT: CapabilityBounds = { contextLength: Infinity, numbers: 'exact' };

/** The context length each mode takes from `v` (undefined: left out). */
const ctx = (v: unknown, bounds: CapabilityBounds) => readCapabilities({ context_length: v }, bounds).context_length;

describe('the capability fields, declared once', () => {
  it('are the four documented fields in their order; the flags are the three booleans', () => {
    expect(CAPABILITY_FIELDS).toEqual(['vision', 'tools', 'json_mode', 'context_length']);
    expect(CAPABILITY_FLAGS).toEqual(['vision', 'tools', 'json_mode']);
  });

  it('declaredFor completes a model own entry field by field from `*`', () => {
    const decl = { '*': { vision: true, tools: false, json_mode: true, context_length: 4096 }, m: { tools: true } };
    expect(declaredFor(decl, 'm')).toEqual({ vision: true, tools: true, json_mode: true, context_length: 4096 });
  });
});

describe('readCapabilities', () => {
  it.each([HINT, CLAMPED, EXACT])('takes flags only as booleans and drops unknown keys (%o)', (bounds) => {
    expect(readCapabilities({ vision: true, tools: false, json_mode: true, context_length: 8192, telepathy: true }, bounds)).toEqual({
      vision: true,
      tools: false,
      json_mode: true,
      context_length: 8192,
    });
    expect(readCapabilities({ vision: 'true', tools: 1, json_mode: null }, bounds)).toEqual({});
    for (const raw of [null, undefined, 'vision', 7, [true]]) expect(readCapabilities(raw, bounds)).toEqual({});
  });

  it('hint (a worker frame): below 1 or not a number says nothing; fractions round up; too large is lowered', () => {
    for (const v of [0, -5, 0.5, -Infinity, NaN, '8192', null, true]) expect(ctx(v, HINT)).toBeUndefined();
    expect(ctx(1, HINT)).toBe(1);
    expect(ctx(1.5, HINT)).toBe(2);
    expect(ctx(MAX + 1, HINT)).toBe(MAX);
    expect(ctx(Infinity, HINT)).toBe(MAX);
  });

  it('clamped (a peer replica): any number is brought into [1, bound]; not a number is left out', () => {
    expect([0, -5, 0.5, -Infinity].map((v) => ctx(v, CLAMPED))).toEqual([1, 1, 1, 1]);
    expect(ctx(1.5, CLAMPED)).toBe(2);
    expect(ctx(1e30, CLAMPED)).toBe(MAX);
    for (const v of [NaN, '8192', null]) expect(ctx(v, CLAMPED)).toBeUndefined();
  });

  it('exact (the daemon configuration): only a whole number in [1, bound] is taken', () => {
    for (const v of [0, -5, 0.5, 1.5, Infinity, NaN, '8192']) expect(ctx(v, EXACT)).toBeUndefined();
    expect(ctx(1, EXACT)).toBe(1);
    expect(ctx(1e300, EXACT)).toBe(1e300);
    expect(ctx(9, { contextLength: 8, numbers: 'exact' })).toBeUndefined();
  });
});

describe("a worker frame's capabilities", () => {
  const register = (caps: string) =>
    parseWorkerMessage(`{"type":"register","worker_name":"w","models":["a"],"max_concurrent":1,"capabilities":${caps}}`) as RegisterMessage;

  it('keep every model entry that is an object, read as hints; other entries and a non-object map are ignored', () => {
    const caps = register('{"a":{"vision":"yes","context_length":0},"b":[],"c":null,"d":5,"":{"tools":true},"e":{"context_length":1e400}}').capabilities!;
    expect(caps).toEqual({ a: {}, '': { tools: true }, e: { context_length: MAX } });
    expect(register('[{"vision":true}]').capabilities).toBeUndefined();
    expect(register('"vision"').capabilities).toBeUndefined();
  });

  it('a "__proto__" entry is skipped and changes no prototype, so it declares nothing for any model', () => {
    const caps = register('{"__proto__":{"m":{"vision":false}},"a":{"tools":true}}').capabilities!;
    expect(Object.keys(caps)).toEqual(['a']);
    expect(Object.getPrototypeOf(caps)).toBe(Object.prototype);
    expect(declaredFor(caps, 'm')).toBeUndefined();
  });
});

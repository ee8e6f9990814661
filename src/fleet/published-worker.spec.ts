import { readPublishedWorker } from './published-worker';

/** A minimal published worker as another replica's store would hold it. */
const raw = (capabilities: unknown) => ({
  id: 'w1',
  name: 'n',
  provider: 'local',
  replica: 'gw-b',
  models: ['m'],
  max_concurrent: 1,
  endpoints: null,
  capabilities,
});
const capsOf = (capabilities: unknown) => readPublishedWorker(raw(capabilities))!.capabilities;

describe("another replica's published capabilities", () => {
  it('are clamped into range: a context length below 1 becomes 1, a fraction rounds up, a huge one is lowered', () => {
    expect(
      capsOf({ a: { context_length: 0 }, b: { context_length: -5 }, c: { context_length: 0.5 }, d: { context_length: 1.5 }, e: { context_length: 1e30 } }),
    ).toEqual({
      a: { context_length: 1 },
      b: { context_length: 1 },
      c: { context_length: 1 },
      d: { context_length: 2 },
      e: { context_length: 100_000_000 },
    });
  });

  it('leave out what is not of its type, and entries whose model name is empty, too long or "__proto__"', () => {
    const caps = capsOf(JSON.parse('{"a":{"vision":"yes","context_length":"8192"},"b":[],"":{"tools":true},"__proto__":{"m":{}},"c":null}'));
    expect(caps).toEqual({ a: {}, b: {} });
    expect(Object.getPrototypeOf(caps)).toBe(Object.prototype);
    expect(capsOf({ ['x'.repeat(513)]: { tools: true }, ['y'.repeat(512)]: { tools: true } })).toEqual({ ['y'.repeat(512)]: { tools: true } });
    expect(capsOf([{ vision: true }])).toEqual({});
  });

  it('read at most 4096 entries, skipped ones counted', () => {
    const many: Record<string, unknown> = { '': {} };
    for (let i = 0; i < 4096; i++) many[`m${i}`] = { tools: true };
    const caps = capsOf(many);
    expect(Object.keys(caps)).toHaveLength(4095);
    expect(caps.m4094).toEqual({ tools: true });
    expect(caps.m4095).toBeUndefined();
  });
});

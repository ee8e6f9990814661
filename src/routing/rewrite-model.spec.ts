import fc from 'fast-check';
import { replaceTopLevelModel } from './rewrite-model';

describe('replaceTopLevelModel', () => {
  it('replaces only the top-level model and keeps every other byte', () => {
    const raw = '{ "model" : "gpt-4",\n "seed": 12345678901234567890, "metadata": {"model": "keep"}, "messages": [{"content": "\\"model\\": \\"x\\""}]}';
    const out = replaceTopLevelModel(raw, 'llama3:70b');
    expect(out).toBe(raw.replace('"gpt-4"', '"llama3:70b"'));
    expect(out).toContain('12345678901234567890'); // re-serialising would have rounded this
  });

  it('handles a model key written with escapes and a model that needs escaping', () => {
    const raw = '{"messages":[],"mod\\u0065l":"a"}';
    expect(JSON.parse(replaceTopLevelModel(raw, 'we"ird\\name')).model).toBe('we"ird\\name');
  });

  it('replaces every top-level duplicate, since JSON.parse keeps the last', () => {
    const out = replaceTopLevelModel('{"model":"a","x":{"model":"n"},"model":"b"}', 'c');
    expect(out).toBe('{"model":"c","x":{"model":"n"},"model":"c"}');
  });

  it('for any object, only the top-level model changes', () => {
    fc.assert(
      fc.property(fc.dictionary(fc.string(), fc.jsonValue()), fc.string(), fc.string(), fc.boolean(), (rest, model, served, pretty) => {
        const body = { ...rest, model };
        const raw = JSON.stringify(body, null, pretty ? 2 : 0);
        const parsed = JSON.parse(replaceTopLevelModel(raw, served));
        expect(parsed).toEqual({ ...JSON.parse(raw), model: served });
      }),
    );
  });
});

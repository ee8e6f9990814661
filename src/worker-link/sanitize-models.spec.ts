import { restrictToProvider, sanitizeMaxConcurrent, sanitizeModels, sanitizeWorkerName } from './sanitize-models';

describe('sanitizeModels', () => {
  it('trims, drops empties and duplicates keeping first-seen order', () => {
    expect(sanitizeModels([' a', 'b ', '', 'a', '  ', 'c'], 10)).toEqual({
      models: ['a', 'b', 'c'],
      warnings: ['dropped 2 empty model names', 'dropped 1 duplicate model name'],
    });
  });

  it('caps the list at the limit with a warning', () => {
    expect(sanitizeModels(['a', 'b', 'c'], 2)).toEqual({ models: ['a', 'b'], warnings: ['model list truncated from 3 to 2 entries (provider limit)'] });
  });

  it('warns about an empty result and stays silent for a clean list', () => {
    expect(sanitizeModels([], 5).warnings).toEqual(['worker registered without any routable models']);
    expect(sanitizeModels(['x', '*'], 5)).toEqual({ models: ['x', '*'], warnings: [] });
  });

  it('drops names longer than 256 characters instead of shortening them', () => {
    expect(sanitizeModels(['a'.repeat(257), 'b'.repeat(256)], 10)).toEqual({
      models: ['b'.repeat(256)],
      warnings: ['dropped 1 model name longer than 256 characters'],
    });
  });

  it('never keeps more than 1,024 models, whatever the provider limit', () => {
    const many = Array.from({ length: 2000 }, (_, i) => `m${i}`);
    const { models, warnings } = sanitizeModels(many, 1_000_000);
    expect(models).toHaveLength(1024);
    expect(warnings).toEqual(['model list truncated from 2000 to 1024 entries (gateway limit)']);
  });

  it('keeps at most 65,536 characters of model names in total', () => {
    const names = Array.from({ length: 300 }, (_, i) => `${String(i).padStart(3, '0')}${'x'.repeat(253)}`); // 256 each
    const { models, warnings } = sanitizeModels(names, 1000);
    expect(models).toEqual(names.slice(0, 256));
    expect(warnings).toEqual(['model list truncated from 300 to 256 entries (model names above 65536 characters in total)']);
  });
});

describe('sanitizeWorkerName / sanitizeMaxConcurrent', () => {
  it('bounds the worker name to 255 characters with a warning, and names an empty one', () => {
    const warnings: string[] = [];
    expect(sanitizeWorkerName(` ${'n'.repeat(300)} `, warnings)).toBe('n'.repeat(255));
    expect(sanitizeWorkerName('  ', warnings)).toBe('unnamed');
    expect(sanitizeWorkerName(`${'n'.repeat(254)}🙂`, warnings)).toBe('n'.repeat(254)); // no half surrogate pair
    expect(warnings).toEqual(['worker_name truncated to 255 characters', 'worker_name truncated to 255 characters']);
  });

  it('counts 0 as 1 and lowers values above 4,096 with a warning', () => {
    const warnings: string[] = [];
    expect(sanitizeMaxConcurrent(0, warnings)).toBe(1);
    expect(sanitizeMaxConcurrent(4096, warnings)).toBe(4096);
    expect(warnings).toEqual([]);
    expect(sanitizeMaxConcurrent(2 ** 40, warnings)).toBe(4096);
    expect(warnings).toEqual([`max_concurrent lowered from ${2 ** 40} to 4096 (gateway limit)`]);
  });
});

describe('restrictToProvider', () => {
  const allowed = new Set(['a', 'b']);
  const mayServe = (m: string) => allowed.has(m);

  it('keeps allowed names and "*", and reports the rest', () => {
    const warnings: string[] = [];
    expect(restrictToProvider(['a', 'x', '*', 'y', 'b'], mayServe, { name: 'p', restricted: true }, warnings)).toEqual(['a', '*', 'b']);
    expect(warnings).toEqual([
      'dropped 2 models provider "p" may not serve (not in its models, or listed by another provider): "x", "y"',
      '"*" stands for the models provider "p" allows',
    ]);
  });

  it('is silent when everything is allowed, and says so when nothing is', () => {
    const clean: string[] = [];
    expect(restrictToProvider(['a', '*'], mayServe, { name: 'p', restricted: false }, clean)).toEqual(['a', '*']);
    expect(clean).toEqual([]);
    const none: string[] = [];
    expect(restrictToProvider(['x'], mayServe, { name: 'p', restricted: true }, none)).toEqual([]);
    expect(none[1]).toBe('worker registered without any routable models');
  });

  it('quotes at most 10 names and shortens each, so a hostile list cannot bloat the ack', () => {
    const warnings: string[] = [];
    const many = Array.from({ length: 500 }, (_, i) => `${'n'.repeat(200)}${i}`);
    restrictToProvider(many, mayServe, { name: 'p', restricted: true }, warnings);
    expect(warnings[0]).toMatch(/^dropped 500 models .* and 490 more$/);
    expect(warnings[0].length).toBeLessThan(1000);
  });
});

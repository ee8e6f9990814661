import { sanitizeModels } from './sanitize-models';

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
});

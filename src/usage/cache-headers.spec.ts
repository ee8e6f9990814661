import { readCacheHeaders } from './cache-headers';

describe('readCacheHeaders', () => {
  it.each([
    ['true', true],
    ['false', false],
    ['1', true],
    ['0', false],
    ['hit', true],
    ['miss', false],
    ['HIT', true],
    [' Miss ', false],
    ['yes', true],
    ['no', false],
    ['hit, miss', true],
  ])('reads x-cache-hit: %j as hit=%j', (value, hit) => {
    expect(readCacheHeaders({ 'x-cache-hit': value })).toEqual({ hit });
  });

  it.each(['', 'maybe', 'partial', '2', 'hitting'])('ignores x-cache-hit: %j', (value) => {
    expect(readCacheHeaders({ 'x-cache-hit': value })).toEqual({});
  });

  it('reads a whole number of reused tokens, and nothing else', () => {
    expect(readCacheHeaders({ 'x-cache-tokens-reused': '128' })).toEqual({ tokensReused: 128 });
    expect(readCacheHeaders({ 'x-cache-tokens-reused': ' 0 ' })).toEqual({ tokensReused: 0 });
    for (const bad of ['-3', '1.5', 'lots', '', '1e3', '9999999999999999999']) {
      expect(readCacheHeaders({ 'x-cache-tokens-reused': bad })).toEqual({});
    }
  });

  it('finds the headers in any case, and reports nothing without them', () => {
    expect(readCacheHeaders({ 'X-Cache-Hit': 'true', 'X-Cache-Tokens-Reused': '7' })).toEqual({ hit: true, tokensReused: 7 });
    expect(readCacheHeaders({ 'content-type': 'application/json' })).toEqual({});
    expect(readCacheHeaders(undefined)).toEqual({});
  });
});

import { compileAllowList, isGlob, ModelOwnership, OwningProvider } from './model-ownership';

const provider = (name: string, models: string[]): OwningProvider => ({ name, allowList: compileAllowList(models) });

describe('compileAllowList', () => {
  it('matches exact names and * globs; everything but * is literal', () => {
    const list = compileAllowList(['llama-3.1-8b', 'qwen-*', '*-instruct', 'a*b*c']);
    expect(list.restricted).toBe(true);
    expect([...list.exact]).toEqual(['llama-3.1-8b']);
    expect(list.globs).toEqual(['qwen-*', '*-instruct', 'a*b*c']);
    for (const m of ['llama-3.1-8b', 'qwen-', 'qwen-2.5-72b', 'mistral-instruct', 'abc', 'a-b-c', 'axxbyyc']) expect(list.matches(m)).toBe(true);
    // `.` is literal, names are anchored at both ends, and matching is case-sensitive.
    for (const m of ['llama-3X1-8b', 'llama-3.1-8b-q4', 'xqwen-1', 'QWEN-1', 'mistral-instruct-v2', 'ab', 'acb']) expect(list.matches(m)).toBe(false);
  });

  it('treats regular-expression characters in globs literally', () => {
    const list = compileAllowList(['m(1)+[x]?.*']);
    expect(list.matches('m(1)+[x]?.gguf')).toBe(true);
    expect(list.matches('m11x.gguf')).toBe(false);
  });

  it('a lone * allows everything; an empty list is unrestricted', () => {
    expect(compileAllowList(['*']).matches('anything at all')).toBe(true);
    const open = compileAllowList([]);
    expect(open.restricted).toBe(false);
    expect(open.matches('x')).toBe(false);
  });

  it('matches names across newlines too (a glob is not a line-based pattern)', () => {
    expect(compileAllowList(['team-*']).matches('team-a\nb')).toBe(true);
  });

  it('isGlob', () => {
    expect(isGlob('a*')).toBe(true);
    expect(isGlob('a')).toBe(false);
  });
});

describe('ModelOwnership', () => {
  const local = provider('local', ['secret-model', 'local-*']);
  const team = provider('team', ['team-*', 'shared']);
  const alsoShared = provider('also', ['shared']);
  const open = provider('open', []);
  const all = [local, team, alsoShared, open];

  it('a listed model belongs to the providers listing it; nobody else may serve it', () => {
    const o = new ModelOwnership(() => all);
    expect([...o.ownersOf('secret-model')]).toEqual([local]);
    expect(o.mayServe(local, 'local-7b')).toBe(true);
    expect(o.mayServe(open, 'local-7b')).toBe(false);
    expect(o.mayServe(team, 'secret-model')).toBe(false);
    expect([...o.ownersOf('shared')]).toEqual([team, alsoShared]);
    expect(o.mayServe(alsoShared, 'shared')).toBe(true);
  });

  it('a model nobody lists is served only by providers without models', () => {
    const o = new ModelOwnership(() => all);
    expect(o.ownersOf('free').size).toBe(0);
    expect(o.mayServe(open, 'free')).toBe(true);
    expect(o.mayServe(local, 'free')).toBe(false);
  });

  it('caches per model until invalidated', () => {
    const providers = [local, open];
    let scans = 0;
    const o = new ModelOwnership(() => {
      scans++;
      return providers;
    });
    o.ownersOf('local-1');
    o.ownersOf('local-1');
    expect(scans).toBe(1);
    providers.push(provider('late', ['local-1']));
    expect(o.ownersOf('local-1').size).toBe(1); // still the cached answer
    o.invalidate();
    expect(o.ownersOf('local-1').size).toBe(2);
    expect(scans).toBe(2);
  });

  it('stays bounded when clients ask for endless distinct names', () => {
    let scans = 0;
    const o = new ModelOwnership(() => {
      scans++;
      return [local];
    });
    for (let i = 0; i < 10_000; i++) o.ownersOf(`junk-${i}`);
    expect((o as unknown as { cache: Map<string, unknown> }).cache.size).toBeLessThanOrEqual(4096);
    expect(scans).toBe(10_000);
  });
});

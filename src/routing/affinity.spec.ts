import { AFFINITY_SOURCES, AffinityConfig } from '../config/sections/routing-affinity';
import { BoundedAffinity } from './affinity';
import { affinityKeyOf } from './affinity-key';
import { loadSignal } from './scoring';

interface W {
  name: string;
  affinityHash: number;
  load: number;
  free: boolean;
  priority: number;
}

const worker = (name: string, load = 0, free = true, priority = 100): W => ({ name, affinityHash: -1, load, free, priority });

function decide(a: BoundedAffinity<W>, key: number, workers: W[]): W | undefined {
  a.begin(key);
  for (const w of workers) a.eligible(w, w.load, w.free, w.priority);
  return a.end();
}

const config: AffinityConfig = { enabled: true, sources: [...AFFINITY_SOURCES], prefixChars: 2048, minPrefixChars: 512, loadFactor: 1.25 };
const LONG = 'You are a careful assistant. '.repeat(40);

describe('BoundedAffinity (consistent hashing with bounded loads)', () => {
  it('sends a key to the same worker every time while it is within the bound', () => {
    const a = new BoundedAffinity<W>(1.25);
    const fleet = ['w1', 'w2', 'w3', 'w4'].map((n) => worker(n));
    const first = decide(a, 12345, fleet);
    expect(a.result).toBe('preferred');
    for (let i = 0; i < 10; i++) expect(decide(a, 12345, fleet)).toBe(first);
  });

  it('spreads different keys over every worker', () => {
    const a = new BoundedAffinity<W>(1.25);
    const fleet = ['w1', 'w2', 'w3', 'w4'].map((n) => worker(n));
    const counts = new Map<string, number>();
    for (let k = 0; k < 4000; k++) {
      const w = decide(a, Math.imul(k, 2654435761) >>> 0, fleet)!;
      counts.set(w.name, (counts.get(w.name) ?? 0) + 1);
    }
    for (const n of ['w1', 'w2', 'w3', 'w4']) expect(counts.get(n)).toBeGreaterThan(700);
  });

  it('spills to the next worker on the ring when the preferred one is past load_factor × mean load', () => {
    const a = new BoundedAffinity<W>(1.25);
    const fleet = ['w1', 'w2', 'w3', 'w4'].map((n) => worker(n, 2));
    const preferred = decide(a, 777, fleet)!;
    // Loads 2,2,2,2 → bound ⌈1.25 × 9 / 4⌉ = 3: the preferred worker at 2 takes one more.
    expect(a.result).toBe('preferred');
    preferred.load = 3; // sum 9 → bound ⌈1.25 × 10 / 4⌉ = 4: 3 + 1 still fits
    expect(decide(a, 777, fleet)).toBe(preferred);
    preferred.load = 4; // sum 10 → bound ⌈1.25 × 11 / 4⌉ = 4: 4 + 1 does not
    const next = decide(a, 777, fleet);
    expect(next).not.toBe(preferred);
    expect(a.result).toBe('spilled');
    expect(a.preferred).toBe(preferred);
    // The spill goes to the key's second choice: the same one each time.
    expect(decide(a, 777, fleet)).toBe(next);
  });

  it('passes over a preferred worker with no free slot, and one of a worse priority than a free worker', () => {
    const a = new BoundedAffinity<W>(1.25);
    const fleet = ['w1', 'w2', 'w3'].map((n) => worker(n));
    const preferred = decide(a, 4242, fleet)!;
    preferred.free = false;
    expect(decide(a, 4242, fleet)).not.toBe(preferred);
    expect(a.result).toBe('spilled');
    preferred.free = true;
    preferred.priority = 101;
    expect(decide(a, 4242, fleet)).not.toBe(preferred);
    for (const w of fleet) w.priority = 101;
    expect(decide(a, 4242, fleet)).toBe(preferred);
  });

  it('returns nothing when no free worker is within the bound (the strategy picks)', () => {
    const a = new BoundedAffinity<W>(1.25);
    expect(decide(a, 1, [worker('w1', 0, false)])).toBeUndefined();
    expect(a.result).toBe('spilled');
  });

  it('a worker leaving moves only its own keys; one joining takes only keys it now wins', () => {
    const a = new BoundedAffinity<W>(1.25);
    const names = Array.from({ length: 8 }, (_, i) => `gpu-${i}`);
    const fleet = names.map((n) => worker(n));
    const keys = Array.from({ length: 2000 }, (_, k) => Math.imul(k + 1, 2246822519) >>> 0);
    const before = keys.map((k) => decide(a, k, fleet)!.name);
    const without = fleet.filter((w) => w.name !== 'gpu-3');
    const after = keys.map((k) => decide(a, k, without)!.name);
    let moved = 0;
    for (let i = 0; i < keys.length; i++) {
      if (before[i] !== after[i]) {
        moved++;
        expect(before[i]).toBe('gpu-3');
      }
    }
    expect(moved).toBe(before.filter((n) => n === 'gpu-3').length);
    const joined = [...fleet, worker('gpu-8')];
    const withNew = keys.map((k) => decide(a, k, joined)!.name);
    for (let i = 0; i < keys.length; i++) if (withNew[i] !== before[i]) expect(withNew[i]).toBe('gpu-8');
    const share = withNew.filter((n) => n === 'gpu-8').length / keys.length;
    expect(share).toBeGreaterThan(0.05);
    expect(share).toBeLessThan(0.2);
  });
});

describe('affinity keys', () => {
  const chat = (messages: unknown[], extra: Record<string, unknown> = {}) => ({ model: 'm', messages, ...extra });
  const key = (headers: Record<string, string>, body: Record<string, unknown>, endpoint = '/v1/chat/completions', c = config) =>
    affinityKeyOf(headers, endpoint, body, c, JSON.stringify(body).length);

  it('takes the first source that gives one: header, client session header, prompt_cache_key, metadata.user_id, user, prefix', () => {
    const body = chat([{ role: 'user', content: 'hi' }], { prompt_cache_key: 'pck', user: 'u1', metadata: { user_id: 'anth' } });
    const byHeader = key({ 'x-session-affinity': 's1' }, body);
    expect(byHeader).toBe(key({ 'x-session-affinity': 's1' }, chat([{ role: 'user', content: 'other' }])));
    expect(key({ 'x-claude-code-session-id': 'c1' }, body)).toBe(key({ 'x-claude-code-session-id': 'c1' }, {}));
    expect(key({ session_id: 'codex' }, {})).toBe(key({ 'session-id': 'codex' }, {}));
    expect(key({}, body)).toBe(key({}, { prompt_cache_key: 'pck' }));
    expect(key({}, { metadata: { user_id: 'anth' }, user: 'x' })).toBe(key({}, { metadata: { user_id: 'anth' } }));
    expect(key({}, { user: 'u1' })).not.toBe(key({}, { prompt_cache_key: 'u1' }));
    expect(key({}, chat([{ role: 'user', content: 'short' }]))).toBeUndefined();
  });

  it('follows routing.affinity.sources (order and subset)', () => {
    const only = { ...config, sources: ['user' as const] };
    expect(key({ 'x-session-affinity': 's1' }, { user: 'u' }, undefined, only)).toBe(key({}, { user: 'u' }, undefined, only));
    expect(key({ 'x-session-affinity': 's1' }, {}, undefined, only)).toBeUndefined();
  });

  it('hashes the normalised system and first message, so a conversation keeps its key turn after turn', () => {
    const sys = { role: 'system', content: LONG };
    const turn1 = chat([sys, { role: 'user', content: 'Plan the trip' }]);
    const turn3 = chat([sys, { role: 'user', content: 'Plan  the\ntrip' }, { role: 'assistant', content: 'ok' }, { role: 'user', content: 'more' }]);
    expect(key({}, turn1)).toBeDefined();
    expect(key({}, turn3)).toBe(key({}, turn1));
    expect(key({}, chat([sys, { role: 'user', content: 'Something else' }]))).not.toBe(key({}, turn1));
  });

  it('shares the key between requests whose first prefix_chars characters agree', () => {
    const short = { ...config, prefixChars: 100 };
    const a = chat([{ role: 'system', content: LONG + 'task A' }]);
    const b = chat([{ role: 'system', content: LONG + 'task B' }]);
    expect(key({}, a, undefined, short)).toBe(key({}, b, undefined, short));
    expect(key({}, a)).not.toBe(key({}, b));
  });

  it('reads the Anthropic system field, Responses instructions and completion prompts; not embeddings', () => {
    const m = { system: LONG, messages: [{ role: 'user', content: [{ type: 'text', text: 'go' }] }] };
    expect(key({}, m, '/v1/messages')).toBeDefined();
    expect(key({}, { instructions: LONG, input: 'go' }, '/v1/responses')).toBeDefined();
    expect(key({}, { prompt: LONG }, '/v1/completions')).toBeDefined();
    expect(key({}, { input: LONG }, '/v1/embeddings')).toBeUndefined();
  });

  it('gives prompts under routing.affinity.min_prefix_chars no prefix key (0: every prompt one), and never throws on odd shapes', () => {
    const short = chat([{ role: 'user', content: 'hi' }]);
    expect(affinityKeyOf({}, '/v1/chat/completions', short, config, 40)).toBeUndefined();
    const all = { ...config, minPrefixChars: 0 };
    expect(affinityKeyOf({}, '/v1/chat/completions', short, all, 40)).toBeDefined();
    expect(affinityKeyOf({}, '/v1/chat/completions', short, all, 40)).toBe(
      affinityKeyOf({}, '/v1/chat/completions', chat([{ role: 'user', content: 'hi' }]), all, 40),
    );
    for (const odd of [{ messages: 'x' }, { messages: [null, 3, { content: 7 }] }, { metadata: 'x', user: 5, prompt_cache_key: {} }]) {
      expect(() => key({}, odd)).not.toThrow();
    }
  });
});

describe('loadSignal', () => {
  it('is the load, or KV-cache usage × slots when the worker reports that and it is higher', () => {
    expect(loadSignal({ load: 2, maxConcurrent: 8, cacheStats: undefined })).toBe(2);
    expect(loadSignal({ load: 2, maxConcurrent: 8, cacheStats: { kv_cache_usage_ratio: 0.75 } })).toBe(6);
    expect(loadSignal({ load: 2, maxConcurrent: 8, cacheStats: { kv_cache_usage_ratio: 0.1 } })).toBe(2);
    expect(loadSignal({ load: 2, maxConcurrent: 8, cacheStats: { prefix_cache_hit_ratio: 0.9 } })).toBe(2);
  });
});

import { startGateway, TestGateway } from '../support/gateway';
import { ScriptedWorker } from '../support/scripted-worker';
import { chat, post } from '../support/http';
import { autoRespond, metricValue, OK_BODY, workerView, writeConfig } from '../support/routing';

const CONFIG = writeConfig('providers:\n  - name: local\n    secret: test-worker-secret\nrouting:\n  expose_worker_header: true\n');

/** Sends one request with `headers`; resolves with the name in `x-switchboard-worker`. */
async function placed(gw: TestGateway, model: string, headers: Record<string, string>, body: Record<string, unknown> = {}): Promise<string> {
  const res = await post(gw.url, '/v1/chat/completions', chat(model, body), headers);
  expect(res.status).toBe(200);
  return res.headers.get('x-switchboard-worker')!;
}

async function fleetOf(gw: TestGateway, model: string, names: string[], maxConcurrent = 8): Promise<ScriptedWorker[]> {
  const out: ScriptedWorker[] = [];
  for (const worker_name of names) {
    const { worker } = await ScriptedWorker.register(gw.workerUrl, { models: [model], max_concurrent: maxConcurrent, worker_name });
    out.push(worker);
  }
  return out;
}

describe('cache affinity with bounded loads (issue 19)', () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startGateway({ CONFIG_FILE: CONFIG });
  });
  afterAll(() => gw.close());

  it('the same session lands on the same worker; different sessions spread over the fleet', async () => {
    const fleet = await fleetOf(gw, 'aff-same', ['same-a', 'same-b', 'same-c']);
    fleet.forEach((w) => autoRespond(w));
    const before = await metricValue(gw, 'switchboard_affinity_total', { result: 'preferred' });
    const first = await placed(gw, 'aff-same', { 'x-session-affinity': 'conversation-1' });
    expect(['same-a', 'same-b', 'same-c']).toContain(first);
    for (let i = 0; i < 8; i++) expect(await placed(gw, 'aff-same', { 'x-session-affinity': 'conversation-1' })).toBe(first);
    // Claude Code's own session header and the body's prompt_cache_key work the same way.
    const claude = await placed(gw, 'aff-same', { 'x-claude-code-session-id': 'cc-42' });
    for (let i = 0; i < 4; i++) expect(await placed(gw, 'aff-same', { 'x-claude-code-session-id': 'cc-42' })).toBe(claude);
    const cached = await placed(gw, 'aff-same', {}, { prompt_cache_key: 'pck-7' });
    for (let i = 0; i < 4; i++) expect(await placed(gw, 'aff-same', {}, { prompt_cache_key: 'pck-7' })).toBe(cached);
    expect(await metricValue(gw, 'switchboard_affinity_total', { result: 'preferred' })).toBe(before + 9 + 5 + 5);
    const used = new Set<string>();
    for (let s = 0; s < 30; s++) used.add(await placed(gw, 'aff-same', { 'x-session-affinity': `s-${s}` }));
    expect(used.size).toBe(3);
    fleet.forEach((w) => w.close());
  });

  it('without any key field, the start of the prompt is the key: every turn of one conversation lands on the same worker', async () => {
    const fleet = await fleetOf(gw, 'aff-prefix', ['prefix-a', 'prefix-b', 'prefix-c']);
    fleet.forEach((w) => autoRespond(w));
    const system = { role: 'system', content: 'You review pull requests for the payments service. '.repeat(20) };
    const turn = (conversation: number, n: number) => {
      const messages: Array<{ role: string; content: string }> = [system, { role: 'user', content: `conversation ${conversation}: the first question` }];
      for (let i = 1; i <= n; i++) messages.push({ role: 'assistant', content: `answer ${i}` }, { role: 'user', content: `follow-up ${i}` });
      return { messages };
    };
    const first = await placed(gw, 'aff-prefix', {}, turn(1, 0));
    for (let n = 1; n <= 6; n++) expect(await placed(gw, 'aff-prefix', {}, turn(1, n))).toBe(first);
    const used = new Set<string>();
    for (let c = 2; c < 32; c++) used.add(await placed(gw, 'aff-prefix', {}, turn(c, 0)));
    expect(used.size).toBeGreaterThan(1);
    fleet.forEach((w) => w.close());
  });

  it("a key's preferred worker at its load bound spills to the next worker on the ring", async () => {
    const fleet = await fleetOf(gw, 'aff-spill', ['spill-a', 'spill-b']);
    const headers = { 'x-session-affinity': 'busy-session' };
    const spilledBefore = await metricValue(gw, 'switchboard_affinity_total', { result: 'spilled' });
    const held: Array<{ worker: ScriptedWorker; id: string; res: ReturnType<typeof post> }> = [];
    const hold = async () => {
      const res = post(gw.url, '/v1/chat/completions', chat('aff-spill'), headers);
      const got = await ScriptedWorker.firstOf(fleet, 'request');
      held.push({ worker: got.worker, id: got.frame.request_id, res });
      return got.worker;
    };
    const preferred = await hold(); // loads 0,0: bound ⌈1.25 × 1 / 2⌉ = 1
    expect(await hold()).toBe(preferred); // loads 1,0: bound ⌈1.25 × 2 / 2⌉ = 2, 1 + 1 fits
    const third = await hold(); // loads 2,0: bound ⌈1.25 × 3 / 2⌉ = 2, 2 + 1 does not
    expect(third).not.toBe(preferred);
    expect(await metricValue(gw, 'switchboard_affinity_total', { result: 'spilled' })).toBe(spilledBefore + 1);
    for (const h of held) h.worker.complete(h.id, OK_BODY);
    const names = await Promise.all(held.map(async (h) => (await h.res).headers.get('x-switchboard-worker')));
    const preferredName = preferred === fleet[0] ? 'spill-a' : 'spill-b';
    expect(names).toEqual([preferredName, preferredName, preferredName === 'spill-a' ? 'spill-b' : 'spill-a']);
    // Once it is back under the bound, the key returns to its preferred worker.
    autoRespond(fleet[0]);
    autoRespond(fleet[1]);
    expect(await placed(gw, 'aff-spill', headers)).toBe(preferredName);
    fleet.forEach((w) => w.close());
  });

  it('a worker leaving moves only the keys it held', async () => {
    const names = ['ring-a', 'ring-b', 'ring-c', 'ring-d'];
    const fleet = await fleetOf(gw, 'aff-ring', names);
    fleet.forEach((w) => autoRespond(w));
    const keys = Array.from({ length: 24 }, (_, i) => `ring-session-${i}`);
    const before = new Map<string, string>();
    for (const k of keys) before.set(k, await placed(gw, 'aff-ring', { 'x-session-affinity': k }));
    const leaving = before.get(keys[0])!;
    const gone = fleet[names.indexOf(leaving)];
    gone.close();
    await gone.closed;
    let moved = 0;
    for (const k of keys) {
      const now = await placed(gw, 'aff-ring', { 'x-session-affinity': k });
      if (before.get(k) === leaving) {
        moved++;
        expect(now).not.toBe(leaving);
      } else expect(now).toBe(before.get(k));
    }
    expect(moved).toBeGreaterThan(0);
    fleet.forEach((w) => w.close());
  });

  it('requests without a key count as none; a worker reporting KV-cache usage (negotiated) is weighed as loaded', async () => {
    const full = await ScriptedWorker.register(gw.workerUrl, { models: ['aff-kv'], max_concurrent: 4, worker_name: 'kv-full', features: ['cache_stats'] });
    const empty = await ScriptedWorker.register(gw.workerUrl, { models: ['aff-kv'], max_concurrent: 4, worker_name: 'kv-empty', features: ['cache_stats'] });
    expect(full.ack.features).toContain('cache_stats');
    const pong = (w: ScriptedWorker, kv: number) =>
      w.ws.on('message', (data) => {
        const f = JSON.parse(data.toString());
        if (f.type === 'ping') w.send({ type: 'pong', current_load: 0, cache_stats: { kv_cache_usage_ratio: kv, prefix_cache_hit_ratio: 0.5 } });
      });
    pong(full.worker, 0.95);
    pong(empty.worker, 0.05);
    autoRespond(full.worker);
    autoRespond(empty.worker);
    // The gateway pings on its heartbeat; send pongs now too so the test need not wait for one.
    full.worker.send({ type: 'pong', current_load: 0, cache_stats: { kv_cache_usage_ratio: 0.95 } });
    empty.worker.send({ type: 'pong', current_load: 0, cache_stats: { kv_cache_usage_ratio: 0.05 } });
    const none = await metricValue(gw, 'switchboard_affinity_total', { result: 'none' });
    await new Promise((r) => setTimeout(r, 50));
    expect((await workerView(gw, full.ack.worker_id)).cache_stats).toMatchObject({ kv_cache_usage_ratio: 0.95 });
    for (let i = 0; i < 4; i++) expect(await placed(gw, 'aff-kv', {})).toBe('kv-empty');
    expect(await metricValue(gw, 'switchboard_affinity_total', { result: 'none' })).toBe(none + 4);
    full.worker.close();
    empty.worker.close();
  });

  it('ignores cache_stats from a worker that did not negotiate it', async () => {
    const { worker, ack } = await ScriptedWorker.register(gw.workerUrl, { models: ['aff-plain'], worker_name: 'plain' });
    worker.send({ type: 'pong', current_load: 0, cache_stats: { kv_cache_usage_ratio: 0.9 } });
    await new Promise((r) => setTimeout(r, 50));
    expect((await workerView(gw, ack.worker_id)).cache_stats).toBeNull();
    worker.close();
  });
});

describe('x-switchboard-worker is off by default', () => {
  it('a response names no worker unless routing.expose_worker_header is on', async () => {
    const gw = await startGateway();
    try {
      const { worker } = await ScriptedWorker.register(gw.workerUrl, { models: ['hdr-off'] });
      autoRespond(worker);
      const res = await post(gw.url, '/v1/chat/completions', chat('hdr-off'));
      expect(res.status).toBe(200);
      expect(res.headers.get('x-switchboard-worker')).toBeNull();
      worker.close();
    } finally {
      await gw.close();
    }
  });
});

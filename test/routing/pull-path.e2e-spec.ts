import { startGateway, TestGateway, TEST_ADMIN_TOKEN } from '../support/gateway';
import { ScriptedWorker } from '../support/scripted-worker';
import { admin, chat, post, sleep } from '../support/http';
import { OK_BODY, writeConfig } from '../support/routing';

const IMAGE = { type: 'image_url', image_url: { url: 'data:image/png;base64,AAAA' } };

function visionChat(model: string, marker: number) {
  return chat(model, { marker, messages: [{ role: 'user', content: [{ type: 'text', text: 'what is it?' }, IMAGE] }] });
}

function marker(frame: { [key: string]: any }): number {
  return JSON.parse(frame.body).marker;
}

/**
 * Under load every worker is busy and requests queue; when a slot frees, each queued request goes
 * through the same filters (capabilities, pin, health) and the same strategy as on arrival.
 */
describe('pull path: queued requests honour requirements and strategy', () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startGateway({
      CONFIG_FILE: writeConfig(`
providers:
  - name: local
    secret: test-worker-secret
    # pp-new is declared (requests wait for it); its other entries are the allow-list of local's workers.
    models: [pp-new, pp, "pp-*"]
  - name: fastp
    secret: fastp-secret
    priority: 1
    capabilities:
      pp2: { vision: false }
  - name: slowp
    secret: slowp-secret
    priority: 90
routing:
  aliases:
    pp-alias: pp-target
`),
    });
  });
  afterAll(() => gw.close());

  it('each queued request goes only to a worker that qualifies, oldest first among those it can serve', async () => {
    const v = await ScriptedWorker.register(gw.workerUrl, { models: ['pp', 'pp-v'], capabilities: { pp: { vision: true, context_length: 100000 } } });
    const n = await ScriptedWorker.register(gw.workerUrl, { models: ['pp', 'pp-n'], capabilities: { pp: { vision: false, context_length: 50 } } });
    // Both workers busy.
    const heldV = post(gw.url, '/v1/chat/completions', chat('pp-v'));
    const hv = await v.worker.next('request');
    const heldN = post(gw.url, '/v1/chat/completions', chat('pp-n'));
    const hn = await n.worker.next('request');

    // Queue, in this order: vision, plain, long (only V has the context), plain.
    const responses: Array<Promise<unknown>> = [];
    const queue = async (body: Record<string, unknown>) => {
      responses.push(post(gw.url, '/v1/chat/completions', body));
      await sleep(30); // keeps arrival order distinct
    };
    await queue(visionChat('pp', 1));
    await queue(chat('pp', { marker: 2 }));
    await queue(chat('pp', { marker: 3, messages: [{ role: 'user', content: 'x'.repeat(400) }] }));
    await queue(chat('pp', { marker: 4 }));
    await sleep(50);
    expect(v.worker.count('request')).toBe(1);
    expect(n.worker.count('request')).toBe(1);

    // N frees a slot: it skips the vision and the long request.
    n.worker.complete(hn.request_id, OK_BODY);
    const n1 = await n.worker.next('request');
    expect(marker(n1)).toBe(2);
    n.worker.complete(n1.request_id, OK_BODY);
    const n2 = await n.worker.next('request');
    expect(marker(n2)).toBe(4);
    n.worker.complete(n2.request_id, OK_BODY);
    await sleep(100);
    expect(n.worker.count('request')).toBe(3); // nothing left that N qualifies for

    // V frees a slot: it takes the vision request, then the long one.
    v.worker.complete(hv.request_id, OK_BODY);
    const v1 = await v.worker.next('request');
    expect(marker(v1)).toBe(1);
    v.worker.complete(v1.request_id, OK_BODY);
    const v2 = await v.worker.next('request');
    expect(marker(v2)).toBe(3);
    v.worker.complete(v2.request_id, OK_BODY);

    for (const r of [heldV, heldN, ...responses]) expect(((await r) as { status: number }).status).toBe(200);
    v.worker.close();
    n.worker.close();
  });

  it('a queued request is given to the best eligible free worker by the strategy, not just to the worker that freed the slot', async () => {
    // F (provider fastp, priority 1) is idle but its provider declares no vision for pp2; S (slowp, priority 90) is busy.
    const f = await ScriptedWorker.register(gw.workerUrl, { models: ['pp2'] }, { provider: 'fastp', secret: 'fastp-secret' });
    const s = await ScriptedWorker.register(gw.workerUrl, { models: ['pp2'] }, { provider: 'slowp', secret: 'slowp-secret' });
    const held = post(gw.url, '/v1/chat/completions', chat('pp2'), { 'x-switchboard-provider': 'slowp' });
    const hs = await s.worker.next('request');
    const queued = post(gw.url, '/v1/chat/completions', visionChat('pp2', 7));
    await sleep(50);
    expect(f.worker.count('request')).toBe(0);
    // Now F qualifies (the declaration is removed) and S frees its slot: the vision request may go to
    // either, and the smart strategy prefers F (priority 1 over 90).
    expect((await admin(gw.url, 'PATCH', '/admin/providers/fastp', TEST_ADMIN_TOKEN, { capabilities: {} })).status).toBe(200);
    s.worker.complete(hs.request_id, OK_BODY);
    expect((await held).status).toBe(200);
    const got = await f.worker.next('request');
    expect(marker(got)).toBe(7);
    f.worker.complete(got.request_id, OK_BODY);
    expect(((await queued) as { status: number }).status).toBe(200);
    expect(s.worker.count('request')).toBe(1);
    f.worker.close();
    s.worker.close();
  });

  it('a newly connected worker takes only the queued requests it qualifies for', async () => {
    // pp-new is declared by the provider but nobody serves it yet: requests wait for a worker.
    const visionReq = post(gw.url, '/v1/chat/completions', visionChat('pp-new', 1));
    await sleep(30);
    const plainReq = post(gw.url, '/v1/chat/completions', chat('pp-new', { marker: 2 }));
    await sleep(50);
    const blind = await ScriptedWorker.register(gw.workerUrl, { models: ['pp-new'], max_concurrent: 4, capabilities: { 'pp-new': { vision: false } } });
    const r = await blind.worker.next('request');
    expect(marker(r)).toBe(2);
    blind.worker.complete(r.request_id, OK_BODY);
    expect(((await plainReq) as { status: number }).status).toBe(200);
    await sleep(100);
    expect(blind.worker.count('request')).toBe(1);
    const seeing = await ScriptedWorker.register(gw.workerUrl, { models: ['pp-new'], capabilities: { 'pp-new': { vision: true } } });
    const rv = await seeing.worker.next('request');
    expect(marker(rv)).toBe(1);
    seeing.worker.complete(rv.request_id, OK_BODY);
    expect(((await visionReq) as { status: number }).status).toBe(200);
    blind.worker.close();
    seeing.worker.close();
  });

  it('a queued alias request reaches the worker with the target model rewritten into the body', async () => {
    const { worker } = await ScriptedWorker.register(gw.workerUrl, { models: ['pp-target'] });
    const first = post(gw.url, '/v1/chat/completions', chat('pp-target', { marker: 1 }));
    const r1 = await worker.next('request');
    const raw = '{"model":"pp-alias","marker":2,"messages":[{"role":"user","content":"pp-alias"}]}';
    const second = post(gw.url, '/v1/chat/completions', raw);
    await sleep(50);
    worker.complete(r1.request_id, OK_BODY);
    const r2 = await worker.next('request');
    expect(r2.model).toBe('pp-target');
    expect(r2.body).toBe('{"model":"pp-target","marker":2,"messages":[{"role":"user","content":"pp-alias"}]}');
    worker.complete(r2.request_id, OK_BODY);
    const res = await second;
    expect(res.status).toBe(200);
    expect(res.headers.get('x-switchboard-model')).toBe('pp-target');
    expect((await first).status).toBe(200);
    worker.close();
  });
});

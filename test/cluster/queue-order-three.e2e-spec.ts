import { TEST_ADMIN_TOKEN, TestGateway } from '../support/gateway';
import { admin, chat, eventually, post, RawResponse, sleep } from '../support/http';
import { ScriptedWorker } from '../support/scripted-worker';
import { itWithLogs as it, withGatewayLogs } from './support/gateway-process';
import { describeWithPostgres } from './support/postgres';
import { busySeenBy, oneSlotWorkerSeenBy } from './support/one-slot-worker';
import { Replicas, startReplicas } from './support/replicas';

const WAIT = 15_000;
/** Rounds of the race: without the order, B and C each win about half of them. */
const ROUNDS = 8;

type Side = 'a' | 'b' | 'c';

/**
 * The cluster's order with three replicas (issue 18): the worker is connected to replica A, which
 * has nothing waiting itself; requests wait at B and at C. When the worker frees its slot, B and C
 * both see it (A publishes it within 20 ms) and may both forward; A grants the first to arrive. The
 * newer request must not be the one sent: it waits for the older one, wherever that one waits.
 */
describeWithPostgres('cluster mode: one queue order across three replicas (the worker at a third)', () => {
  let replicas: Replicas;
  const gw: Record<Side, TestGateway> = {} as never;
  const workers: ScriptedWorker[] = [];

  /** A worker with one slot on replica A, seen by every replica. */
  async function worker(model: string): Promise<ScriptedWorker> {
    const w = await oneSlotWorkerSeenBy(gw.a, Object.values(gw), model, WAIT);
    workers.push(w);
    return w;
  }

  /** A chat request whose one message names it, sent to a replica (as a tenant). */
  const send = (on: Side, model: string, name: string, headers: Record<string, string> = {}): Promise<RawResponse> =>
    post(gw[on].url, '/v1/chat/completions', chat(model, { messages: [{ role: 'user', content: name }] }), headers);

  const nameOf = (frame: Record<string, unknown>): string => JSON.parse(frame.body as string).messages[0].content as string;

  /** One request through B and one through C: their links to A are warm, as in steady operation (a held slot waits at most 100 ms). */
  async function warm(w: ScriptedWorker, model: string): Promise<void> {
    for (const side of ['b', 'c'] as const) {
      const res = send(side, model, `warm-up-${side}`);
      w.complete((await w.next('request')).request_id, { name: 'warm-up' });
      expect((await res).status).toBe(200);
    }
  }

  /** The order the worker gets its next requests in, answering each 100 ms after it came (as a backend takes a while). */
  async function served(w: ScriptedWorker, busyId: string, count: number): Promise<string[]> {
    const names: string[] = [];
    w.complete(busyId, { name: 'busy' });
    for (let i = 0; i < count; i++) {
      const next = await w.next('request');
      names.push(nameOf(next));
      await sleep(100);
      w.complete(next.request_id, { name: nameOf(next) });
    }
    return names;
  }

  beforeAll(
    () =>
      withGatewayLogs(async () => {
        replicas = await startReplicas('queue_order_three', ['gw-a', 'gw-b', 'gw-c'], { boot: 'first-alone' });
        [gw.a, gw.b, gw.c] = replicas.gateways;
      }),
    180_000,
  );

  afterAll(async () => {
    for (const w of workers) w.close();
    await replicas?.close();
  });

  it('a request waiting at B is never passed by one 300 ms newer at C (nor the other way round), on a worker of A', async () => {
    const model = 'three-model';
    const w = await worker(model);
    await warm(w, model);
    for (let round = 0; round < ROUNDS; round++) {
      // Sides swap between rounds: which replica reads the board first must not decide.
      const [older, newer]: Side[] = round % 2 === 0 ? ['b', 'c'] : ['c', 'b'];
      const busy = send('a', model, `busy-${round}`);
      const busyReq = await w.next('request');
      await busySeenBy([gw.b, gw.c], model, WAIT);
      const first = send(older, model, `older-at-${older}-${round}`);
      await sleep(300);
      const second = send(newer, model, `newer-at-${newer}-${round}`);
      // Both queued and published (within 20 ms) before the slot frees.
      await sleep(150);
      expect(await served(w, busyReq.request_id, 2)).toEqual([`older-at-${older}-${round}`, `newer-at-${newer}-${round}`]);
      expect((await Promise.all([busy, first, second])).map((r) => r.status)).toEqual([200, 200, 200]);
    }
  }, 120_000);

  it('an older request at B that cannot be sent (its tenant at max_concurrent) holds C’s request only for the bound, not until it can', async () => {
    const model = 'capped-model';
    const w = await worker(model);
    const hog = await worker('hog-model');
    await warm(w, model);
    // Tenant `capped` may have one request on workers at a time; the setting reaches every replica.
    expect((await admin(gw.b.url, 'PUT', '/admin/tenants/capped', TEST_ADMIN_TOKEN, { max_concurrent: 1 })).status).toBe(200);
    for (const g of Object.values(gw)) {
      await eventually(
        async () => (await admin(g.url, 'GET', '/admin/tenants/capped', TEST_ADMIN_TOKEN)).json?.settings?.max_concurrent === 1,
        WAIT,
        `cap on ${g.url}`,
      );
    }
    // B sends one of capped's requests to the hog worker, which keeps it: B's next one of capped waits.
    const hogging = send('b', 'hog-model', 'hogging', { 'x-tenant-id': 'capped' });
    const hogReq = await hog.next('request');
    const busy = send('a', model, 'busy');
    const busyReq = await w.next('request');
    await busySeenBy([gw.b, gw.c], model, WAIT);
    const capped = send('b', model, 'capped-at-b', { 'x-tenant-id': 'capped' });
    await sleep(300);
    // Another tenant's request, 300 ms newer: B's request is ahead of it in the order, but cannot go.
    const atC = send('c', model, 'y-at-c', { 'x-tenant-id': 'y' });
    await sleep(150);
    w.complete(busyReq.request_id, { name: 'busy' });
    // C's request gets the slot while B's is still at its cap (the hog still holds capped's first).
    const next = await w.next('request');
    expect(nameOf(next)).toBe('y-at-c');
    w.complete(next.request_id, { name: 'y-at-c' });
    expect((await atC).status).toBe(200);
    // Once capped's first request ends, its second one takes the worker.
    hog.complete(hogReq.request_id, { name: 'hogging' });
    const last = await w.next('request');
    expect(nameOf(last)).toBe('capped-at-b');
    w.complete(last.request_id, { name: 'capped-at-b' });
    expect((await Promise.all([busy, hogging, capped])).map((r) => r.status)).toEqual([200, 200, 200]);
  }, 60_000);
});

import { TestGateway } from '../support/gateway';
import { chat, post, RawResponse, sleep } from '../support/http';
import { ScriptedWorker } from '../support/scripted-worker';
import { itWithLogs as it, withGatewayLogs } from './support/gateway-process';
import { describeWithPostgres } from './support/postgres';
import { busySeenBy, oneSlotWorkerSeenBy } from './support/one-slot-worker';
import { Replicas, startReplicas } from './support/replicas';

const WAIT = 15_000;
/** QUEUE_AGING_SECS of every replica: long enough that nothing else ages during a test. */
const AGING_MS = 2_000;

/**
 * The cluster's order (issue 18, "One queue"): two replicas, one worker with one slot connected to
 * replica A, requests waiting at both. A freed slot goes to the request first in the cluster's order
 * — priority after aging, then tenant turns, then arrival — wherever it waits.
 */
describeWithPostgres('cluster mode: one queue order across replicas (aging, tenant turns)', () => {
  let replicas: Replicas;
  const gw: Record<'a' | 'b', TestGateway> = {} as never;
  const workers: ScriptedWorker[] = [];

  /** A worker with one slot on replica A, seen by both replicas. */
  async function worker(model: string): Promise<ScriptedWorker> {
    const w = await oneSlotWorkerSeenBy(gw.a, Object.values(gw), model, WAIT);
    workers.push(w);
    // One request through B first: the link from B to A is warm, as in steady operation (a held
    // slot waits at most 100 ms for the other replica's request; a first connection may take longer).
    const warm = send('b', model, 'warm-up');
    w.complete((await w.next('request')).request_id, { name: 'warm-up' });
    expect((await warm).status).toBe(200);
    return w;
  }

  /** A chat request whose one message names it, sent to a replica as a tenant at a priority. */
  const send = (on: 'a' | 'b', model: string, name: string, headers: Record<string, string> = {}): Promise<RawResponse> =>
    post(gw[on].url, '/v1/chat/completions', chat(model, { messages: [{ role: 'user', content: name }] }), headers);

  /**
   * The order the worker gets its requests in, answering each (by name) 100 ms after it came, as a
   * real backend would take a while: the replicas' order works on figures up to 20 ms old, so a
   * request answered within a millisecond may free its slot before the others know it was served.
   */
  async function served(w: ScriptedWorker, busyId: string, count: number): Promise<string[]> {
    const names: string[] = [];
    w.complete(busyId, { name: 'busy' });
    for (let i = 0; i < count; i++) {
      const next = await w.next('request');
      const name = JSON.parse(next.body as string).messages[0].content as string;
      names.push(name);
      await sleep(100);
      w.complete(next.request_id, { name });
    }
    return names;
  }

  beforeAll(
    () =>
      withGatewayLogs(async () => {
        replicas = await startReplicas('queue_order', ['gw-a', 'gw-b'], { env: { QUEUE_AGING_SECS: String(AGING_MS / 1000) }, boot: 'first-alone' });
        [gw.a, gw.b] = replicas.gateways;
      }),
    120_000,
  );

  afterAll(async () => {
    for (const w of workers) w.close();
    await replicas?.close();
  });

  it('aging counts across replicas: a low request that waited past the aging period at B beats a newer normal one at A', async () => {
    const w = await worker('aging-model');
    const busy = send('a', 'aging-model', 'busy');
    const busyReq = await w.next('request');
    await busySeenBy([gw.b], 'aging-model', WAIT);
    const low = send('b', 'aging-model', 'low-at-b', { 'x-priority': 'low' });
    // Past one aging period it competes as normal; then a normal request arrives at A itself.
    await sleep(AGING_MS + 200);
    const normal = send('a', 'aging-model', 'normal-at-a');
    await sleep(150);
    expect(await served(w, busyReq.request_id, 2)).toEqual(['low-at-b', 'normal-at-a']);
    expect((await Promise.all([busy, low, normal])).map((r) => r.status)).toEqual([200, 200, 200]);
  });

  it('tenants take turns across replicas: after x is served at B, y’s newer request at A goes before x’s next one', async () => {
    const w = await worker('turns-model');
    const busy = send('a', 'turns-model', 'busy');
    const busyReq = await w.next('request');
    await busySeenBy([gw.b], 'turns-model', WAIT);
    const x = [send('b', 'turns-model', 'x1-at-b', { 'x-tenant-id': 'x' }), send('b', 'turns-model', 'x2-at-b', { 'x-tenant-id': 'x' })];
    await sleep(300);
    const y = send('a', 'turns-model', 'y1-at-a', { 'x-tenant-id': 'y' });
    await sleep(150);
    // x1 first (neither tenant served yet: the older request); then y, whose turn is older than x's.
    expect(await served(w, busyReq.request_id, 3)).toEqual(['x1-at-b', 'y1-at-a', 'x2-at-b']);
    expect((await Promise.all([busy, ...x, y])).map((r) => r.status)).toEqual([200, 200, 200, 200]);
  });

  it('a tenant served at another replica takes its turn after the others in this replica’s own queue too', async () => {
    const w = await worker('own-queue-model');
    const busy = send('a', 'own-queue-model', 'busy');
    const busyReq = await w.next('request');
    await busySeenBy([gw.b], 'own-queue-model', WAIT);
    const u1 = send('b', 'own-queue-model', 'u1-at-b', { 'x-tenant-id': 'u' });
    await sleep(100);
    const u2 = send('a', 'own-queue-model', 'u2-at-a', { 'x-tenant-id': 'u' });
    await sleep(300);
    const v = send('a', 'own-queue-model', 'v1-at-a', { 'x-tenant-id': 'v' });
    await sleep(150);
    // u2 is older than v at A, but u's last turn (u1, served from B's queue) is more recent than v's
    // (tenants of their own: turns are per tenant, whatever the model).
    expect(await served(w, busyReq.request_id, 3)).toEqual(['u1-at-b', 'v1-at-a', 'u2-at-a']);
    expect((await Promise.all([busy, u1, u2, v])).map((r) => r.status)).toEqual([200, 200, 200, 200]);
  });
});

import WebSocket from 'ws';
import { freePort } from '../rate-limit/support';
import { TEST_ADMIN_TOKEN, TestGateway } from '../support/gateway';
import { admin, chat, eventually, get, post } from '../support/http';
import { ScriptedWorker } from '../support/scripted-worker';
import { CLUSTER_AUTH_HEADER } from '../../src/cluster/internal-link';
import { itWithLogs as it, withGatewayLogs } from './support/gateway-process';
import { describeWithPostgres } from './support/postgres';
import { REPLICA_SECRET as SECRET, Replicas, startReplicas } from './support/replicas';

/** Opens the link between replicas at `base`: its HTTP status (101 when it opened) and, when open, the socket. */
async function openLink(base: string, headers: Record<string, string> = {}): Promise<{ status: number; socket?: WebSocket }> {
  const socket = new WebSocket(`${base.replace(/^http/, 'ws')}/internal/cluster/v1/link`, { headers });
  return new Promise((resolve) => {
    socket.once('open', () => resolve({ status: 101, socket }));
    socket.once('unexpected-response', (_req, res) => {
      resolve({ status: res.statusCode ?? 0 });
      socket.terminate();
    });
    socket.once('error', () => resolve({ status: 0 }));
  });
}

function nextMessage(socket: WebSocket): Promise<string> {
  return new Promise((resolve) => socket.once('message', (data) => resolve(data.toString())));
}

/** CLUSTER_LISTEN_ADDR: the internal routes move to a listener of their own, off the public port (two real `node dist/main.js` replicas). */
describeWithPostgres('cluster mode: the internal listener (CLUSTER_LISTEN_ADDR)', () => {
  let replicas: Replicas;
  let gw: TestGateway[] = [];
  const ports: number[] = [];
  let worker: ScriptedWorker;
  let workerId: string;

  beforeAll(
    () =>
      withGatewayLogs(async () => {
        // Each replica's internal listener on a port of its own (the replicas boot one after the other).
        const envOf = async () => {
          ports.push(await freePort());
          return { CLUSTER_LISTEN_ADDR: `127.0.0.1:${ports.at(-1)}` };
        };
        replicas = await startReplicas('internal_listener', ['gw-a', 'gw-b'], { envOf, boot: 'first-alone', awaitMembers: false });
        gw = replicas.gateways;
        const registered = await ScriptedWorker.register(gw[0].workerUrl, { models: ['inner-model'], worker_name: 'inner' });
        worker = registered.worker;
        workerId = String(registered.ack.worker_id);
        await eventually(
          async () => ((await get(gw[1].url, '/v1/models')).json?.data ?? []).some((m: { id: string }) => m.id === 'inner-model'),
          15_000,
          'b sees the worker',
        );
      }),
    120_000,
  );

  afterAll(async () => {
    worker?.close();
    await replicas?.close();
  });

  it('replicas advertise the internal address and forward through it', async () => {
    const members = (await admin(gw[1].url, 'GET', '/admin/cluster', TEST_ADMIN_TOKEN)).json.members as Array<{ id: string; advertise_url: string }>;
    expect(members.find((m) => m.id === 'gw-a')!.advertise_url).toBe(`http://127.0.0.1:${ports[0]}`);
    const pending = post(gw[1].url, '/v1/chat/completions', chat('inner-model'));
    const req = await worker.next('request');
    worker.complete(req.request_id, { via: 'internal' });
    const res = await pending;
    expect(res.status).toBe(200);
    expect(res.json).toEqual({ via: 'internal' });
  });

  it('the public listener no longer answers the internal routes, and the internal one answers nothing else', async () => {
    expect((await openLink(gw[0].url, { [CLUSTER_AUTH_HEADER]: SECRET })).status).toBe(404);
    const internalUrl = `http://127.0.0.1:${ports[0]}`;
    expect((await get(internalUrl, '/v1/models')).status).toBe(404);
    expect((await get(internalUrl, '/health')).status).toBe(404);
    // On the internal listener the link is there: without the secret it says so.
    expect((await openLink(internalUrl)).status).toBe(401);
    expect((await openLink(internalUrl, { [CLUSTER_AUTH_HEADER]: 'wrong-secret-0123456789abcdef0123' })).status).toBe(401);
    const { status, socket } = await openLink(internalUrl, { [CLUSTER_AUTH_HEADER]: SECRET });
    expect(status).toBe(101);
    // A peer's messages are checked like any input: a malformed request and one for a worker not here are refused by id.
    socket!.send('{"t":"req","id":"bad-1"}\n{}');
    expect(JSON.parse((await nextMessage(socket!)).slice(1))).toEqual({ t: 'refused', id: 'bad-1', code: 'malformed' });
    const head = { t: 'req', id: 'gone-1', worker: 'no-such-worker', model: 'inner-model', endpoint_path: '/v1/chat/completions', is_streaming: false };
    socket!.send(`${JSON.stringify(head)}\n{}`);
    expect(JSON.parse((await nextMessage(socket!)).slice(1))).toEqual({ t: 'refused', id: 'gone-1', code: 'worker_gone' });
    socket!.terminate();
  });

  it('a calling replica whose link breaks leaves nothing running: its requests are cancelled on the worker', async () => {
    const { socket } = await openLink(`http://127.0.0.1:${ports[0]}`, { [CLUSTER_AUTH_HEADER]: SECRET });
    const head = { t: 'req', id: 'orphan-1', worker: workerId, model: 'inner-model', endpoint_path: '/v1/chat/completions', is_streaming: true };
    socket!.send(`${JSON.stringify(head)}\n${JSON.stringify(chat('inner-model'))}`);
    const req = await worker.next('request', (f) => f.request_id === 'orphan-1');
    worker.chunk(String(req.request_id), 'data: {}\n\n');
    expect(JSON.parse(await nextMessage(socket!))).toMatchObject({ type: 'response_chunk', request_id: 'orphan-1' });
    socket!.terminate();
    const cancel = await worker.next('cancel', (f) => f.request_id === 'orphan-1');
    expect(cancel.request_id).toBe('orphan-1');
  });

  it('a request that one worker of a replica could not take is served by another worker of that replica, over the same link', async () => {
    const w1 = (await ScriptedWorker.register(gw[0].workerUrl, { models: ['pair-model'], worker_name: 'pair-1' })).worker;
    const w2 = (await ScriptedWorker.register(gw[0].workerUrl, { models: ['pair-model'], worker_name: 'pair-2' })).worker;
    try {
      await eventually(
        async () =>
          ((await admin(gw[1].url, 'GET', '/admin/workers', TEST_ADMIN_TOKEN)).json?.data ?? []).filter((x: { models: string[] }) =>
            x.models.includes('pair-model'),
          ).length === 2,
        15_000,
        'b sees both workers',
      );
      const pending = post(gw[1].url, '/v1/chat/completions', chat('pair-model'));
      const { worker: first, frame: req } = await ScriptedWorker.firstOf([w1, w2], 'request');
      const second = first === w1 ? w2 : w1;
      first.send({ type: 'error', request_id: req.request_id, code: 'backend_unavailable', message: 'backend down' });
      const again = await second.next('request');
      expect(again.request_id).toBe(req.request_id);
      second.complete(String(again.request_id), { served: 'second' });
      const res = await pending;
      expect(res.status).toBe(200);
      expect(res.json).toEqual({ served: 'second' });
    } finally {
      w1.close();
      w2.close();
    }
  });
});

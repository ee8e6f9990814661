import { AddressInfo } from 'node:net';
import { WebSocket, WebSocketServer } from 'ws';
import { FakeClock } from '../../test/support/fake-clock';
import { CLUSTER_AUTH_HEADER } from '../cluster/internal-link';
import { encodeRefusal, LINK_PATH } from './link-protocol';
import { LinkCall, PeerLinks } from './peer-link';
import { rawSocketOf } from '../common/ws-tcp-socket';
import { LINK_DEAD_MS, LINK_PING_MS } from './link-socket';

/** A stand-in owner replica: a real WebSocket server on loopback that records what it is sent. */
async function owner(autoPong = true) {
  const server = new WebSocketServer({ port: 0, host: '127.0.0.1', autoPong });
  await new Promise((resolve) => server.once('listening', resolve));
  const received: string[] = [];
  const sockets: WebSocket[] = [];
  const auth: unknown[] = [];
  const paths: unknown[] = [];
  server.on('connection', (socket, req) => {
    sockets.push(socket);
    auth.push(req.headers[CLUSTER_AUTH_HEADER]);
    paths.push(req.url);
    socket.on('message', (data) => received.push(data.toString()));
  });
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return { server, url, received, sockets, auth, paths };
}

function call() {
  const seen: string[] = [];
  const c: LinkCall = {
    frame: (msg) => {
      seen.push(msg.type);
      return msg.type === 'response_complete' ? 'last' : 'more';
    },
    refused: (code) => void seen.push(`refused:${code}`),
    lost: () => void seen.push('lost'),
  };
  return { c, seen };
}

const until = async (check: () => boolean) => {
  for (let i = 0; i < 200 && !check(); i++) await new Promise((r) => setTimeout(r, 10));
  expect(check()).toBe(true);
};

describe('PeerLink: the calling end of the link to another replica', () => {
  const servers: WebSocketServer[] = [];
  afterEach(async () => {
    for (const s of servers.splice(0)) {
      for (const c of s.clients) c.terminate();
      await new Promise((r) => s.close(r));
    }
  });

  it('opens one link per replica with the secret, sends what was written while it opened in order, routes frames and refusals by request id', async () => {
    const o = await owner();
    servers.push(o.server);
    const clock = new FakeClock();
    const links = new PeerLinks({ secret: 's3cret', replicaId: 'r2', maxPayload: 1 << 20, urlOf: () => o.url }, clock);
    const link = links.to('r1')!;
    expect(links.to('r1')).toBe(link);
    const a = call();
    const b = call();
    link.send('a', 'first', a.c);
    link.send('b', 'second', b.c);
    await until(() => o.received.length === 2);
    expect(o.received).toEqual(['first', 'second']);
    expect(o.auth).toEqual(['s3cret']);
    expect(o.paths).toEqual([LINK_PATH]);
    const [socket] = o.sockets;
    socket.send(JSON.stringify({ type: 'response_chunk', request_id: 'a', chunk: 'x' }));
    socket.send(encodeRefusal('b', 'slot_taken'));
    socket.send(JSON.stringify({ type: 'response_complete', request_id: 'a', status_code: 200 }));
    // Frames of a request that ended are not handed on again.
    socket.send(JSON.stringify({ type: 'response_chunk', request_id: 'a', chunk: 'late' }));
    await until(() => a.seen.length === 2 && b.seen.length === 1);
    await new Promise((r) => setTimeout(r, 50));
    expect(a.seen).toEqual(['response_chunk', 'response_complete']);
    expect(b.seen).toEqual(['refused:slot_taken']);
    links.closeAll();
  });

  it('a cancel is sent on the link and nothing more of that request is read; one cancelled before the link opened is never sent', async () => {
    const o = await owner();
    servers.push(o.server);
    const links = new PeerLinks({ secret: 's', replicaId: 'r2', maxPayload: 1 << 20, urlOf: () => o.url }, new FakeClock());
    const link = links.to('r1')!;
    const early = call();
    link.send('early', 'early-req', early.c);
    link.cancel('early');
    const a = call();
    link.send('a', 'req', a.c);
    await until(() => o.received.length === 1);
    link.cancel('a');
    await until(() => o.received.length === 2);
    expect(o.received[0]).toBe('req');
    expect(JSON.parse(o.received[1])).toEqual({ t: 'cancel', id: 'a' });
    o.sockets[0].send(JSON.stringify({ type: 'response_chunk', request_id: 'a', chunk: 'x' }));
    await new Promise((r) => setTimeout(r, 50));
    expect(a.seen).toEqual([]);
    expect(early.seen).toEqual([]);
    links.closeAll();
  });

  it('a request sent again under the same id while its last frame is handled (another worker of that replica) gets its own frames', async () => {
    const o = await owner();
    servers.push(o.server);
    const links = new PeerLinks({ secret: 's', replicaId: 'r2', maxPayload: 1 << 20, urlOf: () => o.url }, new FakeClock());
    const link = links.to('r1')!;
    const retry = call();
    const first: LinkCall = {
      // The worker failed before answering: the Dispatcher routes the request again at once, on this link.
      frame: () => {
        link.send('x', 'retry', retry.c);
        return 'last';
      },
      refused: () => undefined,
      lost: () => undefined,
    };
    link.send('x', 'first', first);
    await until(() => o.received.length === 1);
    o.sockets[0].send(JSON.stringify({ type: 'error', request_id: 'x', code: 'backend_unavailable', message: 'down' }));
    await until(() => o.received.length === 2);
    o.sockets[0].send(JSON.stringify({ type: 'response_complete', request_id: 'x', status_code: 200 }));
    await until(() => retry.seen.length === 1);
    expect(retry.seen).toEqual(['response_complete']);
    links.closeAll();
  });

  it('a link that breaks loses every request on it, and the next request opens a new one', async () => {
    const o = await owner();
    servers.push(o.server);
    const links = new PeerLinks({ secret: 's', replicaId: 'r2', maxPayload: 1 << 20, urlOf: () => o.url }, new FakeClock());
    const first = links.to('r1')!;
    const a = call();
    first.send('a', 'req', a.c);
    await until(() => o.sockets.length === 1);
    o.sockets[0].terminate();
    await until(() => a.seen.length === 1);
    expect(a.seen).toEqual(['lost']);
    const second = links.to('r1')!;
    expect(second).not.toBe(first);
    second.send('b', 'again', call().c);
    await until(() => o.received.includes('again'));
    links.closeAll();
  });

  it('a link that hears nothing (no pong) for LINK_DEAD_MS is closed and its requests lost', async () => {
    const o = await owner(false);
    servers.push(o.server);
    const clock = new FakeClock();
    const links = new PeerLinks({ secret: 's', replicaId: 'r2', maxPayload: 1 << 20, urlOf: () => o.url }, clock);
    const a = call();
    links.to('r1')!.send('a', 'req', a.c);
    await until(() => o.received.length === 1);
    for (let t = 0; t <= LINK_DEAD_MS; t += LINK_PING_MS) clock.advance(LINK_PING_MS);
    await until(() => a.seen.length === 1);
    expect(a.seen).toEqual(['lost']);
  });

  it('a replica that is not a member gets no link; one at a new address gets a new link', async () => {
    const o = await owner();
    servers.push(o.server);
    let url: string | undefined;
    const links = new PeerLinks({ secret: 's', replicaId: 'r2', maxPayload: 1 << 20, urlOf: () => url }, new FakeClock());
    expect(links.to('r1')).toBeUndefined();
    url = o.url;
    const first = links.to('r1')!;
    url = `${o.url}/`;
    expect(links.to('r1')).not.toBe(first);
    links.closeAll();
  });

  it('finds the TCP socket under a WebSocket of this ws version (corking and byte-level liveness rely on it)', async () => {
    const o = await owner();
    servers.push(o.server);
    const ws = new WebSocket(o.url.replace('http', 'ws'));
    await new Promise((resolve) => ws.once('open', resolve));
    expect(rawSocketOf(ws)).toBe((ws as unknown as { _socket: unknown })._socket);
    expect(typeof rawSocketOf(ws)?.cork).toBe('function');
    ws.terminate();
  });
});

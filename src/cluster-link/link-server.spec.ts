import type { AddressInfo } from 'node:net';
import WebSocket, { WebSocketServer } from 'ws';
import { FakeClock } from '../../test/support/fake-clock';
import type { Fleet } from '../fleet/fleet.service';
import type { ForwardRelays } from './forward-relays';
import { LinkSession } from './link-server';

/** The owner's end of a real link on loopback, counting the writes its TCP socket hands to the kernel. */
async function ownerEnd() {
  const server = new WebSocketServer({ port: 0, host: '127.0.0.1' });
  await new Promise<void>((resolve) => server.once('listening', () => resolve()));
  const accepted = new Promise<WebSocket>((resolve) => server.once('connection', (ws) => resolve(ws)));
  const caller = new WebSocket(`ws://127.0.0.1:${(server.address() as AddressInfo).port}`);
  const received: string[] = [];
  caller.on('message', (data) => received.push(data.toString()));
  await new Promise<void>((resolve, reject) => caller.once('open', () => resolve()).once('error', reject));
  const owner = await accepted;
  const writes: string[] = [];
  const tcp = (owner as unknown as { _socket: { _write: (...a: unknown[]) => void; _writev: (...a: unknown[]) => void } })._socket;
  for (const name of ['_write', '_writev'] as const) {
    const real = tcp[name].bind(tcp);
    tcp[name] = (...args: unknown[]) => {
      writes.push(name);
      real(...args);
    };
  }
  // frame() and chunk() write to the socket only; the fleet and relays are for requests arriving.
  const session = new LinkSession(owner, 'r2', {} as Fleet, {} as ForwardRelays, new FakeClock(), 1 << 20);
  const close = async () => {
    caller.terminate();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  };
  return { session, writes, received, close };
}

describe('LinkSession (the owner relaying a forwarded request)', () => {
  it('writes a request’s last frame before frame() returns, with what the turn held before it, in one write', async () => {
    const { session, writes, received, close } = await ownerEnd();
    try {
      session.frame('r-1', JSON.stringify({ type: 'response_start', request_id: 'r-1', status_code: 200 }), false);
      session.chunk('r-1', 'data: a\n\n');
      session.chunk('r-1', 'data: b\n\n');
      expect(writes).toHaveLength(0); // held to the end of the turn
      session.frame('r-1', JSON.stringify({ type: 'response_complete', request_id: 'r-1', status_code: 200 }), true);
      // Out now, not after what the caller does next in this turn (releasing the slot, placing the next request).
      expect(writes).toHaveLength(1);
      for (let i = 0; i < 100 && received.length < 3; i++) await new Promise((r) => setTimeout(r, 5));
      expect(received.map((t) => JSON.parse(t) as { type: string; chunk?: string })).toEqual([
        expect.objectContaining({ type: 'response_start' }),
        expect.objectContaining({ type: 'response_chunk', chunk: 'data: a\n\ndata: b\n\n' }),
        expect.objectContaining({ type: 'response_complete' }),
      ]);
    } finally {
      await close();
    }
  });

  it('holds frames that are not a request’s last to the end of the turn, then writes them once', async () => {
    const { session, writes, received, close } = await ownerEnd();
    try {
      session.frame('r-1', JSON.stringify({ type: 'response_start', request_id: 'r-1', status_code: 200 }), false);
      session.chunk('r-1', 'data: a\n\n');
      expect(writes).toHaveLength(0);
      await Promise.resolve();
      expect(writes).toHaveLength(1);
      for (let i = 0; i < 100 && received.length < 2; i++) await new Promise((r) => setTimeout(r, 5));
      expect(received).toHaveLength(2);
    } finally {
      await close();
    }
  });
});

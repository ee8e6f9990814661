import type { AddressInfo } from 'node:net';
import WebSocket, { WebSocketServer } from 'ws';
import { WorkerToServerMessage } from '../../protocol';
import { FakeClock } from '../../../test/support/fake-clock';
import { LinkSession } from './session';

/** A real WebSocket pair on loopback: the daemon's end as a LinkSession, and what the gateway end reads off its TCP socket. */
async function pair() {
  const server = new WebSocketServer({ port: 0, host: '127.0.0.1' });
  await new Promise<void>((resolve) => server.once('listening', () => resolve()));
  const accepted = new Promise<WebSocket>((resolve) => server.once('connection', (ws) => resolve(ws)));
  const client = new WebSocket(`ws://127.0.0.1:${(server.address() as AddressInfo).port}`);
  await new Promise<void>((resolve, reject) => client.once('open', () => resolve()).once('error', reject));
  const gateway = await accepted;
  // Every read the gateway's socket makes, and every frame in it.
  const reads: number[] = [];
  (gateway as unknown as { _socket: NodeJS.EventEmitter })._socket.on('data', (d: Buffer) => reads.push(d.length));
  const frames: WorkerToServerMessage[] = [];
  gateway.on('message', (data) => frames.push(JSON.parse(data.toString()) as WorkerToServerMessage));
  // Every write the daemon's socket hands to the kernel (Writable's `_write`/`_writev`: one system call each).
  const writes: number[] = [];
  const tcp = (client as unknown as { _socket: { _write: (...a: unknown[]) => void; _writev: (...a: unknown[]) => void } })._socket;
  for (const name of ['_write', '_writev'] as const) {
    const real = tcp[name].bind(tcp);
    tcp[name] = (...args: unknown[]) => {
      writes.push(name === '_writev' ? (args[0] as unknown[]).length : 1);
      real(...args);
    };
  }
  const session = new LinkSession(client, new FakeClock());
  const close = async () => {
    client.terminate();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  };
  return { session, writes, reads, frames, close };
}

const waitFor = async (done: () => boolean) => {
  for (let i = 0; i < 200 && !done(); i++) await new Promise((r) => setTimeout(r, 5));
};

describe('LinkSession (worker daemon)', () => {
  it('sends the frames of one turn in one write: start, chunk and complete leave in one system call, in order', async () => {
    const { session, writes, frames, close } = await pair();
    try {
      session.send({ type: 'response_start', request_id: 'r1', status_code: 200, headers: { 'content-type': 'text/event-stream' } });
      session.send({ type: 'response_chunk', request_id: 'r1', chunk: 'data: {"x":1}\n\n' });
      session.send({ type: 'response_complete', request_id: 'r1', status_code: 200 });
      await waitFor(() => frames.length === 3);
      expect(frames.map((f) => f.type)).toEqual(['response_start', 'response_chunk', 'response_complete']);
      expect(writes).toHaveLength(1);
    } finally {
      await close();
    }
  });

  it('holds no frame past its turn: one sent alone arrives, and so does one sent in a later turn', async () => {
    const { session, reads, frames, close } = await pair();
    try {
      session.send({ type: 'response_chunk', request_id: 'r1', chunk: 'a' });
      await waitFor(() => frames.length === 1);
      expect(frames).toHaveLength(1);
      await new Promise((r) => setImmediate(r));
      session.send({ type: 'response_complete', request_id: 'r1', status_code: 200 });
      await waitFor(() => frames.length === 2);
      expect(frames.map((f) => f.type)).toEqual(['response_chunk', 'response_complete']);
      expect(reads).toHaveLength(2);
    } finally {
      await close();
    }
  });

  it('calls a frame’s written callback once the held write went out (backpressure waits on it)', async () => {
    const { session, frames, close } = await pair();
    try {
      const written = new Promise<void>((resolve) => session.send({ type: 'response_chunk', request_id: 'r1', chunk: 'a' }, resolve));
      session.send({ type: 'response_chunk', request_id: 'r1', chunk: 'b' });
      await written;
      await waitFor(() => frames.length === 2);
      expect(frames).toHaveLength(2);
    } finally {
      await close();
    }
  });

  it('writes the held frames before terminate() cuts the connection (a stop right after its last frames loses none)', async () => {
    const { session, frames, close } = await pair();
    try {
      session.send({ type: 'error', request_id: 'r1', code: 'worker_shutting_down', message: 'stopping' });
      session.terminate();
      await waitFor(() => frames.length === 1);
      expect(frames).toEqual([expect.objectContaining({ type: 'error', request_id: 'r1' })]);
    } finally {
      await close();
    }
  });
});

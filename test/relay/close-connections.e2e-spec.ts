import { connect, Socket } from 'node:net';
import { startGateway, TestGateway } from '../support/gateway';
import { eventually, get } from '../support/http';
import { withDeadline } from '../support/deadline';

/**
 * The gateway's close() ends once its last response is written, whatever the clients' connections
 * do (src/control-plane/close-connections.ts). Before, a browser's spare connection held the
 * dashboard test's gateway close for about a minute, and a keep-alive connection busy at close for
 * 72 s. Far below either, and generous for a loaded machine:
 */
const CLOSE_BOUND_MS = 15_000;

/** A raw client connection, and everything the gateway sends on it until it closes. */
async function rawClient(gw: TestGateway): Promise<{ socket: Socket; received: () => string; ended: Promise<void> }> {
  const { port } = new URL(gw.url);
  const socket = connect(Number(port), '127.0.0.1');
  let data = '';
  socket.on('data', (d) => (data += d.toString()));
  socket.on('error', () => undefined);
  const ended = new Promise<void>((resolve) => socket.once('close', () => resolve()));
  await withDeadline(
    new Promise<void>((resolve, reject) => {
      socket.once('connect', () => resolve());
      socket.once('error', reject);
    }),
    10_000,
    'the raw client did not connect',
  );
  return { socket, received: () => data, ended };
}

describe('closing the gateway with client connections open', () => {
  const sockets: Socket[] = [];
  afterEach(() => {
    for (const s of sockets.splice(0)) s.destroy();
  });

  it('a connection the client opened but sent no request on does not hold close()', async () => {
    const gw = await startGateway();
    const { socket, ended } = await rawClient(gw);
    sockets.push(socket);
    // The gateway has accepted it once another request on a new connection is answered.
    expect((await get(gw.url, '/health/live')).status).toBe(200);

    await withDeadline(gw.close(), CLOSE_BOUND_MS, 'gateway close() did not finish while an unused client connection was open');
    await withDeadline(ended, 5_000, 'the gateway did not close the unused connection');
  });

  it('a keep-alive connection whose request was in flight at close gets its answer, then is closed', async () => {
    const gw = await startGateway();
    const { socket, received, ended } = await rawClient(gw);
    sockets.push(socket);
    const body = JSON.stringify({ model: 'no-such-model', messages: [{ role: 'user', content: 'hi' }] });
    // Headers and half the body now: the request is routed, and waits for the rest.
    const routed = new Promise((resolve) => gw.app.getHttpServer().once('request', resolve));
    socket.write(
      `POST /v1/chat/completions HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n`,
    );
    socket.write(body.slice(0, 10));
    await withDeadline(routed, 10_000, 'the gateway did not receive the request');

    const closing = gw.close();
    // The rest of the body once the listening socket is closed (close() has reached the HTTP server).
    await eventually(() => !gw.app.getHttpServer().listening, 10_000, 'the HTTP server closing');
    socket.write(body.slice(10));

    await withDeadline(closing, CLOSE_BOUND_MS, 'gateway close() did not finish after answering the request in flight');
    await withDeadline(ended, 5_000, 'the gateway did not close the connection after its answer');
    // It was answered (the model does not exist: a JSON error), not cut off.
    expect(received()).toMatch(/^HTTP\/1\.1 \d{3} /);
    expect(received()).toContain('"error"');
  });
});

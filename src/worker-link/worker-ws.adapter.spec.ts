import { AddressInfo } from 'node:net';
import WebSocket, { WebSocketServer } from 'ws';
import { setMaxPayload } from './worker-ws.adapter';

/** Guards the one ws internal the worker link relies on (the per-socket frame cap). */
describe('setMaxPayload', () => {
  it('raises one server-side socket frame cap above the server maxPayload', async () => {
    const server = new WebSocketServer({ port: 0, host: '127.0.0.1', maxPayload: 1024 });
    await new Promise((r) => server.once('listening', r));
    const got: number[] = [];
    const closes: number[] = [];
    server.on('connection', (socket) => {
      socket.on('error', () => undefined); // the 1009 is reported here too
      socket.on('message', (data: Buffer) => {
        got.push(data.length);
        if (got.length === 1) expect(setMaxPayload(socket, 64 * 1024)).toBe(true);
      });
    });
    const client = new WebSocket(`ws://127.0.0.1:${(server.address() as AddressInfo).port}`);
    client.on('close', (code) => closes.push(code));
    await new Promise((r) => client.once('open', r));
    client.send(Buffer.alloc(1000)); // under the server cap: raises it
    await new Promise((r) => setTimeout(r, 100));
    client.send(Buffer.alloc(32 * 1024)); // above 1024, under the raised cap
    await new Promise((r) => setTimeout(r, 100));
    client.send(Buffer.alloc(128 * 1024)); // above the raised cap: 1009
    await new Promise((r) => client.once('close', r));
    expect(got).toEqual([1000, 32 * 1024]);
    expect(closes).toEqual([1009]);
    server.close();
  });

  it('reports false for an object without a frame reader', () => {
    expect(setMaxPayload({}, 10)).toBe(false);
  });
});

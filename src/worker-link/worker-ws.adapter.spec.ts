import { AddressInfo } from 'node:net';
import WebSocket, { WebSocketServer } from 'ws';
import { sendInTurn, setMaxPayload } from './worker-ws.adapter';

/** Guards the ws internals the worker link relies on (the per-socket frame cap, the TCP socket). */
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

describe('sendInTurn', () => {
  it("holds one turn's request frames in the worker's TCP socket until the turn ends; other frames go at once, in order", async () => {
    const server = new WebSocketServer({ port: 0, host: '127.0.0.1' });
    await new Promise((r) => server.once('listening', r));
    const serverSide = new Promise<WebSocket>((r) => server.once('connection', r));
    const client = new WebSocket(`ws://127.0.0.1:${(server.address() as AddressInfo).port}`);
    const got: string[] = [];
    client.on('message', (data: Buffer) => got.push(data.toString()));
    await new Promise((r) => client.once('open', r));
    const socket = await serverSide;
    const tcp = (socket as unknown as { _socket: { writableCorked: number } })._socket;
    sendInTurn(socket, 'one', true);
    sendInTurn(socket, 'two', true);
    expect(tcp.writableCorked).toBe(1); // ws's own cork and uncork around each frame are nested in it
    sendInTurn(socket, 'cancel', false); // goes at once, with the held ones before it
    expect(tcp.writableCorked).toBe(0);
    sendInTurn(socket, 'three', true);
    expect(tcp.writableCorked).toBe(1);
    await new Promise((r) => setImmediate(r));
    expect(tcp.writableCorked).toBe(0);
    await new Promise((r) => setTimeout(r, 50));
    expect(got).toEqual(['one', 'two', 'cancel', 'three']);
    client.close();
    server.close();
  });

  it('sends at once through a socket whose TCP socket it cannot find', () => {
    const sent: string[] = [];
    sendInTurn({ send: (text: string) => sent.push(text) }, 'frame', true);
    expect(sent).toEqual(['frame']);
  });
});

import { writeFileSync } from 'node:fs';
import type { Socket } from 'node:net';
import { join } from 'node:path';
import { connect as tlsConnect } from 'node:tls';
import { selfSignedCert } from '../worker/support/tls-cert';
import { startGateway, TestGateway } from '../support/gateway';
import { ScriptedWorker } from '../support/scripted-worker';
import { chat } from '../support/http';
import { parseRaw, rawSocket, readUntilClosed } from './conn-support';

const CAP = 3;

/** A client connection held open mid-headers (it counts against the cap until the headers timeout). */
async function holdConnection(gw: TestGateway): Promise<Socket> {
  const socket = await rawSocket(gw.url);
  socket.on('error', () => undefined);
  socket.write('GET /v1/models HTTP/1.1\r\nhost: x\r\n');
  return socket;
}

/** One request on a fresh connection with `connection: close`; the raw answer. */
async function oneRequest(gw: TestGateway, path = '/v1/models') {
  const socket = await rawSocket(gw.url);
  const outcome = readUntilClosed(socket, 15_000);
  socket.write(`GET ${path} HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n`);
  return parseRaw((await outcome).text);
}

describe('conn: MAX_CLIENT_CONNECTIONS', () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startGateway({ MAX_CLIENT_CONNECTIONS: String(CAP), HTTP_HEADERS_TIMEOUT_SECS: '30', HTTP_REQUEST_TIMEOUT_SECS: '30' });
  });
  afterAll(() => gw.close());

  it('refuses client connections beyond the cap with a dialect 503, while workers still connect and connected workers do not count', async () => {
    // A worker connected before the cap fills: its upgraded socket must not take a client place.
    const { worker: early } = await ScriptedWorker.register(gw.workerUrl, { models: ['capped'] });
    const held: Socket[] = [];
    for (let i = 0; i < CAP; i++) held.push(await holdConnection(gw));

    const refused = await oneRequest(gw);
    expect(refused.status).toBe(503);
    expect(refused.headers.connection).toBe('close');
    expect(refused.headers['retry-after']).toBe('1');
    expect(JSON.parse(refused.body)).toMatchObject({ error: { code: 'too_many_connections', retriable: true } });
    const anthropic = await oneRequest(gw, '/v1/messages');
    expect(JSON.parse(anthropic.body)).toMatchObject({ type: 'error', error: { type: 'overloaded_error', code: 'too_many_connections' } });

    // While the cap is full, a worker still (re)connects, registers and is sent work.
    const { worker: late, ack } = await ScriptedWorker.register(gw.workerUrl, { models: ['capped-late'] });
    expect(ack.worker_id).toMatch(/^w-/);

    // A client place frees up: requests are served again, by both workers.
    held.pop()!.destroy();
    await new Promise((r) => setTimeout(r, 200));
    const served = fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', connection: 'close' },
      body: JSON.stringify(chat('capped-late')),
    });
    const req = await late.next('request');
    late.complete(req.request_id, { ok: true });
    expect((await served).status).toBe(200);
    expect(early.closeState).toBeUndefined();

    for (const s of held) s.destroy();
    early.close();
    late.close();
  });
});

describe('conn: MAX_CLIENT_CONNECTIONS with TLS (the TCP connection is counted, the TLS socket upgrades)', () => {
  let gw: TestGateway;
  let ca: string;
  beforeAll(async () => {
    const cert = selfSignedCert();
    ca = cert.cert;
    const keyFile = join(cert.certPath, '..', 'key.pem');
    writeFileSync(keyFile, cert.key);
    gw = await startGateway({
      TLS_CERT_FILE: cert.certPath,
      TLS_KEY_FILE: keyFile,
      MAX_CLIENT_CONNECTIONS: '2',
      HTTP_HEADERS_TIMEOUT_SECS: '30',
      HTTP_REQUEST_TIMEOUT_SECS: '30',
    });
  });
  afterAll(() => gw.close());

  function tlsSocket(): Promise<import('node:tls').TLSSocket> {
    const { port } = new URL(gw.url);
    return new Promise((resolve, reject) => {
      const s = tlsConnect({ host: '127.0.0.1', port: Number(port), ca, servername: 'localhost', ALPNProtocols: ['http/1.1'] }, () => resolve(s));
      s.once('error', reject);
    });
  }

  it('lets a wss:// worker register while the cap is full, and its socket does not count', async () => {
    const wss = gw.workerUrl.replace('ws://', 'wss://');
    const { worker: early } = await ScriptedWorker.register(wss, { models: ['tls-capped'] }, { ca });
    const held = [await tlsSocket(), await tlsSocket()];
    for (const s of held) {
      s.on('error', () => undefined);
      s.write('GET /v1/models HTTP/1.1\r\nhost: x\r\n');
    }
    const probe = await tlsSocket();
    const outcome = readUntilClosed(probe, 15_000);
    probe.write('GET /v1/models HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n');
    expect(parseRaw((await outcome).text).status).toBe(503);

    const { worker: late, ack } = await ScriptedWorker.register(wss, { models: ['tls-capped'] }, { ca });
    expect(ack.worker_id).toMatch(/^w-/);
    held.pop()!.destroy();
    await new Promise((r) => setTimeout(r, 200));
    const again = await tlsSocket();
    const served = readUntilClosed(again, 15_000);
    again.write('GET /v1/models HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n');
    expect(parseRaw((await served).text).status).toBe(200);
    for (const s of held) s.destroy();
    early.close();
    late.close();
  });
});

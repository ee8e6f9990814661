import { connect } from 'node:net';
import { answerNext, chatCompletion, createKey } from '../api-keys/support';
import { startGateway, TestGateway } from '../support/gateway';
import { chat, post } from '../support/http';
import { ScriptedWorker } from '../support/scripted-worker';

/** Writes `head` on a raw socket and reads until the gateway closes it (or 5 s pass). */
function rawRequest(gw: TestGateway, head: string): Promise<string> {
  const url = new URL(gw.url);
  return new Promise((resolve) => {
    const socket = connect(Number(url.port), url.hostname, () => socket.write(head));
    let out = '';
    const timer = setTimeout(() => socket.destroy(), 5000);
    socket.on('data', (d) => (out += d.toString('latin1')));
    socket.on('error', () => undefined);
    socket.on('close', () => {
      clearTimeout(timer);
      resolve(out);
    });
  });
}

function parseResponse(raw: string): { status: number; headers: string; body: any } {
  const [head, ...rest] = raw.split('\r\n\r\n');
  return { status: Number(/^HTTP\/1\.1 (\d{3})/.exec(head)?.[1]), headers: head.toLowerCase(), body: JSON.parse(rest.join('\r\n\r\n')) };
}

describe('hardening/auth: header values', () => {
  let gw: TestGateway;
  let worker: ScriptedWorker;
  let key: string;
  beforeAll(async () => {
    gw = await startGateway(); // keys not required: a stray key would otherwise be "a backend credential"
    ({ worker } = await ScriptedWorker.register(gw.workerUrl, { models: ['m1'], max_concurrent: 4 }));
    ({ key } = await createKey(gw, { name: 'app', tenant: 'team-k' }));
  });
  afterAll(async () => {
    worker.close();
    await gw.close();
  });

  describe('a gateway key anywhere in a header value is recognised and never forwarded', () => {
    it.each([
      ['x-api-key: Bearer <key>', () => ({ 'x-api-key': `Bearer ${key}` })],
      ['authorization: <key> without a scheme', () => ({ authorization: key })],
      ['authorization: Token <key>', () => ({ authorization: `Token ${key}` })],
    ])('%s authenticates as the key', async (_label, headers) => {
      const pending = post(gw.url, '/v1/chat/completions', chat('m1'), headers());
      const frame = await answerNext(worker, chatCompletion);
      expect((await pending).status).toBe(200);
      expect(frame.headers['x-tenant-id']).toBe('team-k');
      expect(JSON.stringify(frame)).not.toContain(key.slice(3));
    });

    it('a key pasted into another header is dropped from what the worker receives; ordinary headers pass', async () => {
      const pending = post(gw.url, '/v1/chat/completions', chat('m1'), { 'x-custom-auth': `token=${key}`, 'x-trace': 'sb-short', 'x-note': 'visit sb-' });
      const frame = await answerNext(worker, chatCompletion);
      expect((await pending).status).toBe(200);
      expect(JSON.stringify(frame)).not.toContain(key.slice(3));
      expect(frame.headers).not.toHaveProperty('x-custom-auth');
      expect(frame.headers['x-trace']).toBe('sb-short');
    });

    it('an unknown gateway key inside a header value is refused, not forwarded as a backend credential', async () => {
      const res = await post(gw.url, '/v1/chat/completions', chat('m1'), { 'x-api-key': 'Bearer sb-AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA' });
      expect([res.status, res.json.error.code]).toEqual([401, 'invalid_api_key']);
      expect(worker.count('request')).toBe(4);
    });
  });

  describe("CR, LF or NUL in a header value answers a 400 in the caller's dialect, naming the header", () => {
    const body = JSON.stringify(chat('m1'));
    const head = (path: string, value: string) =>
      `POST ${path} HTTP/1.1\r\nhost: gw\r\ncontent-type: application/json\r\nx-injected: ${value}\r\ncontent-length: ${body.length}\r\n\r\n${body}`;

    it.each([
      ['NUL', 'a\u0000b'],
      ['a bare CR', 'a\rset-cookie: x=1'],
      ['a bare LF', 'a\nset-cookie: x=1'],
      ['a folded line (CRLF + space)', 'a\r\n b'],
    ])('%s (OpenAI route)', async (_label, value) => {
      const res = parseResponse(await rawRequest(gw, head('/v1/chat/completions', value)));
      expect(res.status).toBe(400);
      expect(res.headers).toContain('connection: close');
      expect(res.body.error).toMatchObject({ type: 'invalid_request_error', code: 'invalid_request', param: 'x-injected' });
    });

    it('on the Anthropic route the body is Anthropic-shaped', async () => {
      const res = parseResponse(await rawRequest(gw, head('/v1/messages', 'a\u0000b')));
      expect(res.status).toBe(400);
      expect(res.body).toMatchObject({ type: 'error', error: { type: 'invalid_request_error', code: 'invalid_request' } });
      expect(res.body.error.message).toContain("'x-injected'");
    });

    it('a tab is a legal header character and passes', async () => {
      const pending = rawRequest(gw, head('/v1/chat/completions', 'a\tb').replace('\r\n\r\n', '\r\nconnection: close\r\n\r\n'));
      await answerNext(worker, chatCompletion);
      expect(parseResponse(await pending).status).toBe(200);
    });
  });
});

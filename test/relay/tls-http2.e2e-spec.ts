import { connect } from 'node:http2';
import { request as httpsRequest } from 'node:https';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startGateway, TestGateway } from '../support/gateway';
import { ScriptedWorker } from '../support/scripted-worker';
import { selfSignedCert, TestCert } from '../worker/support/tls-cert';
import { loadConfig } from '../../src/config';

/** HTTPS with HTTP/2 and HTTP/1.1 fallback on one port, the workers' wss:// included. */
describe('TLS: HTTP/2 with HTTP/1.1 fallback', () => {
  let gw: TestGateway;
  let tls: TestCert;
  let base: string;
  beforeAll(async () => {
    tls = selfSignedCert();
    const keyFile = join(tls.certPath, '..', 'key.pem');
    writeFileSync(keyFile, tls.key);
    gw = await startGateway({ TLS_CERT_FILE: tls.certPath, TLS_KEY_FILE: keyFile });
    base = gw.url.replace('http://', 'https://');
  });
  afterAll(() => gw.close());

  function h2(path: string, body?: string): Promise<{ status: number; headers: Record<string, unknown>; text: string }> {
    return new Promise((resolve, reject) => {
      const session = connect(base, { ca: tls.cert });
      session.on('error', reject);
      const req = session.request({ ':path': path, ':method': body ? 'POST' : 'GET', 'content-type': 'application/json' });
      let text = '';
      let headers: Record<string, unknown> = {};
      req.on('response', (h) => (headers = h));
      req.on('data', (d) => (text += d));
      req.on('end', () => {
        session.close();
        resolve({ status: Number(headers[':status']), headers, text });
      });
      req.on('error', reject);
      req.end(body);
    });
  }

  function h1(path: string): Promise<{ status: number; httpVersion: string; text: string }> {
    return new Promise((resolve, reject) => {
      // An HTTP/1.1-only client: node's https module does not offer h2 in ALPN.
      const req = httpsRequest(`${base}${path}`, { ca: tls.cert }, (res) => {
        let text = '';
        res.on('data', (d) => (text += d));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, httpVersion: res.httpVersion, text }));
      });
      req.on('error', reject);
      req.end();
    });
  }

  it('serves HTTP/2 and HTTP/1.1 clients on the same port', async () => {
    expect((await h2('/health/live')).status).toBe(200);
    const old = await h1('/health/live');
    expect(old.status).toBe(200);
    expect(old.httpVersion).toBe('1.1');
  });

  it('relays a streaming completion over HTTP/2 from a worker connected over wss://', async () => {
    const { worker } = await ScriptedWorker.register(gw.workerUrl.replace('ws://', 'wss://'), { models: ['tls-model'] }, { ca: tls.cert });
    const pending = h2('/v1/chat/completions', JSON.stringify({ model: 'tls-model', stream: true, messages: [{ role: 'user', content: 'hi' }] }));
    const req = await worker.next('request');
    const sse = 'data: {"choices":[{"delta":{"content":"secure"}}]}\n\ndata: [DONE]\n\n';
    worker.chunk(req.request_id, sse);
    worker.send({ type: 'response_complete', request_id: req.request_id, status_code: 200 });
    const res = await pending;
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toBe('text/event-stream');
    expect(res.headers['x-correlation-id']).toBeTruthy();
    expect(res.text).toBe(sse);
    worker.close();
  });

  it('refuses a half TLS configuration at boot', () => {
    expect(() => loadConfig({ TLS_CERT_FILE: tls.certPath })).toThrow(/TLS_CERT_FILE and TLS_KEY_FILE go together/);
    expect(() => loadConfig({ TLS_CERT_FILE: '/nonexistent/cert.pem', TLS_KEY_FILE: '/nonexistent/key.pem' })).toThrow(/cannot be read/);
  });
});

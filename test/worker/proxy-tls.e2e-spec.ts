import * as https from 'node:https';
import { AddressInfo } from 'node:net';
import { BackendClient } from '../../src/worker/requests/backend-client';
import { tlsTrust } from '../../src/worker/network/tls-trust';
import { FakeGateway } from './support/fake-gateway';
import { SECRET, requestFrame, useWorkerHarness, within } from './support/harness';
import { TestProxy } from './support/test-proxy';
import { TestCert, selfSignedCert } from './support/tls-cert';

/**
 * Corporate networks: a wss:// gateway with a private CA, reached through an HTTP CONNECT proxy,
 * and backend calls through the same proxy settings. Everything runs on loopback.
 */
describe('worker daemon: proxies and private CAs', () => {
  const { env, startWorker } = useWorkerHarness();
  let cert: TestCert;
  let otherCert: TestCert;
  let proxy: TestProxy;

  beforeAll(() => {
    cert = selfSignedCert();
    otherCert = selfSignedCert('unrelated-ca');
  });

  beforeEach(async () => {
    proxy = new TestProxy();
    await proxy.start();
  });

  afterEach(async () => {
    await proxy.stop();
  });

  /** Swaps the harness's plain gateway for a wss:// one with the self-signed certificate. */
  async function tlsGateway(): Promise<void> {
    await env.gateway.stop();
    env.gateway = new FakeGateway({ secret: SECRET, tls: { key: cert.key, cert: cert.cert } });
    await env.gateway.start();
  }

  it('reaches a wss:// gateway through the CONNECT proxy, trusting the gateway certificate from --ca-file', async () => {
    await tlsGateway();
    const worker = startWorker({ httpsProxy: proxy.url, caFile: cert.certPath });
    const conn = await env.gateway.connection(1);
    expect((await conn.next('register')).worker_name).toBe('test-worker');
    expect(conn.secretHeader).toBe(SECRET);
    expect(proxy.tunnels.map((t) => t.authority)).toEqual([`127.0.0.1:${env.gateway.port}`]);
    // The proxy only saw CONNECT host:port; the secret travelled inside the TLS tunnel.
    expect(JSON.stringify(proxy.tunnels[0].headers)).not.toContain(SECRET);
    expect(worker.logs).toContainEqual(expect.objectContaining({ msg: expect.stringContaining('through a proxy'), proxy: proxy.url }));
  });

  it('authenticates to the proxy with the credentials of HTTPS_PROXY and never logs them', async () => {
    await tlsGateway();
    proxy.requireAuth = `Basic ${Buffer.from('svc-worker:p@ss w0rd').toString('base64')}`;
    const port = new URL(proxy.url).port;
    const worker = startWorker({ httpsProxy: `http://svc-worker:p%40ss%20w0rd@127.0.0.1:${port}/`, caFile: cert.certPath });
    await (await env.gateway.connection(1)).next('register');
    const text = worker.rawLogs.join('');
    expect(text).not.toContain('p@ss');
    expect(text).not.toContain('p%40ss');
  });

  it('without the CA, fails with a clear TLS error naming --ca-file, and never registers', async () => {
    await tlsGateway();
    const worker = startWorker({ httpsProxy: proxy.url });
    await within(new Promise((r) => worker.daemon.once('disconnected', r)), 'the failed connection');
    expect(worker.logs).toContainEqual(
      expect.objectContaining({
        level: 'error',
        msg: 'TLS verification of the gateway failed',
        code: 'DEPTH_ZERO_SELF_SIGNED_CERT',
        hint: expect.stringContaining('--ca-file'),
      }),
    );
    expect(env.gateway.attempts).toHaveLength(0);
    expect(env.gateway.connections).toHaveLength(0);
  });

  it('a --ca-file with an unrelated CA does not make the gateway trusted, but NODE_EXTRA_CA_CERTS next to it still counts', async () => {
    await tlsGateway();
    const refused = startWorker({ caFile: otherCert.certPath });
    await within(new Promise((r) => refused.daemon.once('disconnected', r)), 'the refused connection');
    expect(refused.logs).toContainEqual(expect.objectContaining({ msg: 'TLS verification of the gateway failed' }));
    await refused.daemon.stop();

    startWorker({ caFile: otherCert.certPath, extraCaCertsFile: cert.certPath });
    await (await env.gateway.connection(1)).next('register');
  });

  it('with --insecure-skip-verify connects without the CA and warns loudly at start', async () => {
    await tlsGateway();
    const worker = startWorker({ httpsProxy: proxy.url, insecureSkipVerify: true });
    await (await env.gateway.connection(1)).next('register');
    const warning = worker.logs.find((l) => String(l.msg).includes('TLS CERTIFICATE VERIFICATION IS OFF'));
    expect(warning).toMatchObject({ level: 'warn' });
    expect(worker.logs.indexOf(warning!)).toBeLessThan(worker.logs.findIndex((l) => l.msg === 'connected to gateway; registering'));
  });

  it('goes direct to a gateway that NO_PROXY lists', async () => {
    await tlsGateway();
    startWorker({ httpsProxy: proxy.url, noProxy: 'example.org,127.0.0.1', caFile: cert.certPath });
    await (await env.gateway.connection(1)).next('register');
    expect(proxy.tunnels).toEqual([]);
  });

  it('tunnels a plain ws:// gateway through HTTP_PROXY too', async () => {
    startWorker({ httpProxy: proxy.url });
    await (await env.gateway.connection(1)).next('register');
    expect(proxy.tunnels.map((t) => t.authority)).toEqual([`127.0.0.1:${env.gateway.port}`]);
  });

  it('reports a proxy that refuses the tunnel with the status and a hint about the proxy variables', async () => {
    await tlsGateway();
    proxy.refuseConnect = 403;
    const worker = startWorker({ httpsProxy: proxy.url, caFile: cert.certPath });
    await within(new Promise((r) => worker.daemon.once('disconnected', r)), 'the refused tunnel');
    expect(worker.logs).toContainEqual(
      expect.objectContaining({
        msg: 'gateway connection error',
        error: expect.stringMatching(/refused CONNECT 127\.0\.0\.1:\d+: 403/),
        hint: expect.stringContaining('HTTPS_PROXY'),
      }),
    );
  });

  describe('backend calls', () => {
    it('send a loopback backend through HTTP_PROXY unless NO_PROXY lists it (curl semantics), and warn about it at start', async () => {
      const worker = startWorker({ httpProxy: proxy.url, noProxy: 'gateway.example.com' });
      const conn = await env.gateway.connection(1);
      // The gateway link is ws:// to 127.0.0.1, so it is tunnelled too.
      await conn.next('register');
      const req = requestFrame();
      conn.send(req);
      expect((await conn.final(req.request_id)).status_code).toBe(200);
      expect(proxy.forwarded.map((f) => f.url)).toEqual([`${env.backend.url}/v1/chat/completions`]);
      expect(worker.logs).toContainEqual(
        expect.objectContaining({
          level: 'warn',
          msg: expect.stringContaining('backend calls go through the proxy'),
          hint: expect.stringContaining('NO_PROXY=127.0.0.1'),
        }),
      );
    });

    it('go direct when NO_PROXY lists the backend host', async () => {
      startWorker({ httpProxy: proxy.url, noProxy: '127.0.0.1' });
      const conn = await env.gateway.connection(1);
      await conn.next('register');
      const req = requestFrame();
      conn.send(req);
      expect((await conn.final(req.request_id)).status_code).toBe(200);
      expect(proxy.forwarded).toEqual([]);
      expect(proxy.tunnels).toEqual([]);
    });

    it('reach an https backend through a CONNECT tunnel, trusting its private CA', async () => {
      const server = https.createServer({ key: cert.key, cert: cert.cert }, (_req, res) => {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end('{"object":"list","data":[{"id":"secure-model"}]}');
      });
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      const url = `https://127.0.0.1:${(server.address() as AddressInfo).port}`;
      const trusted = new BackendClient(url, { proxy: { httpsProxy: proxy.url }, tls: tlsTrust({ caFile: cert.certPath, insecureSkipVerify: false }) });
      const untrusted = new BackendClient(url, { proxy: { httpsProxy: proxy.url }, tls: tlsTrust({ insecureSkipVerify: false }) });
      try {
        expect(await trusted.listModels(AbortSignal.timeout(5_000))).toEqual(['secure-model']);
        expect(proxy.tunnels.map((t) => t.authority)).toEqual([new URL(url).host]);
        await expect(untrusted.listModels(AbortSignal.timeout(5_000))).rejects.toThrow(/self-signed certificate/);
      } finally {
        trusted.close();
        untrusted.close();
        server.closeAllConnections();
        await new Promise<void>((resolve) => server.close(() => resolve()));
      }
    });
  });
});

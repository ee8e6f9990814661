import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { DASHBOARD_CSP } from '../../src/dashboard/dashboard.controller';
import { DashboardAssets } from '../../src/dashboard/dashboard-assets';
import { startGateway, TestGateway, TEST_ADMIN_TOKEN } from '../support/gateway';
import { ScriptedWorker } from '../support/scripted-worker';
import { admin, chat, post } from '../support/http';

const PUBLIC = join(__dirname, '..', '..', 'src', 'dashboard', 'public');

/** The page and its assets as HTTP serves them: no token, no data, strict headers. */
describe('dashboard: serving the page', () => {
  let gw: TestGateway;
  beforeAll(async () => {
    // The test below sends ten wrong admin tokens from this address and then the right one, which the
    // admin token's failed-attempt limiter (ADMIN_AUTH_FAILURE_LIMIT, default 10) would refuse.
    gw = await startGateway({ ADMIN_AUTH_FAILURE_LIMIT: '100' });
  });
  afterAll(() => gw.close());

  it('GET /dashboard is the page, without a token, with a strict CSP and no data in it', async () => {
    const res = await fetch(`${gw.url}/dashboard`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(res.headers.get('content-security-policy')).toBe(DASHBOARD_CSP);
    expect(DASHBOARD_CSP).toContain("script-src 'self'");
    expect(DASHBOARD_CSP).toContain("form-action 'none'");
    expect(DASHBOARD_CSP).toContain("frame-ancestors 'none'");
    expect(res.headers.get('x-content-type-options')).toBe('nosniff');
    expect(res.headers.get('x-frame-options')).toBe('DENY');
    expect(res.headers.get('referrer-policy')).toBe('no-referrer');
    expect(res.headers.get('cache-control')).toBe('no-cache');
    expect(res.headers.get('set-cookie')).toBeNull();
    const html = await res.text();
    expect(html).toBe(readFileSync(join(PUBLIC, 'index.html'), 'utf8'));
    // No inline script (the CSP would block it anyway); the page's code is its own module.
    expect(html).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/);
    expect(html).toContain('<script type="module" src="dashboard/assets/app.js"></script>');
  });

  it('serves every asset of public/ with its type and an ETag (304 when unchanged); nothing else', async () => {
    const files = readdirSync(PUBLIC).filter((f) => f !== 'index.html');
    expect(files.sort()).toEqual([
      'api.js',
      'app.js',
      'audit.js',
      'caps.js',
      'chargeback.js',
      'confirm-dialog.js',
      'dashboard.css',
      'dom.js',
      'model.js',
      'overview.js',
      'views.js',
    ]);
    for (const file of files) {
      const res = await fetch(`${gw.url}/dashboard/assets/${file}`);
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toBe(file.endsWith('.css') ? 'text/css; charset=utf-8' : 'text/javascript; charset=utf-8');
      expect(await res.text()).toBe(readFileSync(join(PUBLIC, file), 'utf8'));
      const etag = res.headers.get('etag')!;
      expect(etag).toMatch(/^"[\w-]+"$/);
      const again = await fetch(`${gw.url}/dashboard/assets/${file}`, { headers: { 'if-none-match': etag } });
      expect(again.status).toBe(304);
      expect(await again.text()).toBe('');
    }
    for (const path of [
      '/dashboard/assets/nope.js',
      '/dashboard/assets/index.html',
      '/dashboard/assets/..%2F..%2F..%2Fpackage.json',
      '/dashboard/assets/%2e%2e%2fdashboard.controller.ts',
      '/dashboard/assets/../dashboard.module.ts',
    ]) {
      const res = await fetch(`${gw.url}${path}`);
      expect([path, res.status]).toEqual([path, 404]);
    }
  });

  it('/dashboard/ redirects to /dashboard with a relative Location (the page uses relative URLs)', async () => {
    const res = await fetch(`${gw.url}/dashboard/`, { redirect: 'manual' });
    expect(res.status).toBe(308);
    expect(res.headers.get('location')).toBe('../dashboard');
    expect(new URL(res.headers.get('location')!, `${gw.url}/dashboard/`).pathname).toBe('/dashboard');
  });

  it('every admin route the page reads or calls needs the admin token', async () => {
    const { worker, ack } = await ScriptedWorker.register(gw.workerUrl, { models: ['http-m'] });
    const id = ack.worker_id as string;
    for (const [method, path] of [
      ['GET', '/admin/stats'],
      ['GET', '/v1/pools'],
      ['GET', '/admin/workers'],
      ['GET', '/admin/cordons'],
      ['GET', '/admin/providers'],
      ['POST', `/admin/workers/${id}/drain`],
      ['POST', `/admin/workers/${id}/undrain`],
      ['POST', `/admin/workers/${id}/refresh-models`],
      ['POST', '/v1/pools/local/drain'],
      ['POST', '/v1/pools/local/undrain'],
    ]) {
      const res = await admin(gw.url, method, path, 'wrong-token', method === 'POST' ? {} : undefined);
      expect([method, path, res.status, res.json.error.code]).toEqual([method, path, 401, 'unauthorized']);
    }
    expect(worker.closeState).toBeUndefined();
    worker.close();
  });

  it('GET /admin/stats carries what the page charts: overall and per-pool latency and history, recent errors with correlation ids', async () => {
    const { worker } = await ScriptedWorker.register(gw.workerUrl, { models: ['stats-m'] });
    const pending = post(gw.url, '/v1/chat/completions', chat('stats-m'));
    worker.complete((await worker.next('request')).request_id, { ok: true });
    expect((await pending).status).toBe(200);
    const missing = await post(gw.url, '/v1/chat/completions', chat('nobody-has-this'), { 'x-correlation-id': 'http-spec-corr-1' });
    expect(missing.status).toBe(404);

    const stats = (await admin(gw.url, 'GET', '/admin/stats', TEST_ADMIN_TOKEN)).json;
    expect(stats.overall).toMatchObject({ requests_per_min: expect.any(Number), error_rate: expect.any(Number) });
    expect(stats.overall.latency_ms.samples).toBeGreaterThanOrEqual(1);
    expect(stats.overall.history.requests).toHaveLength(30);
    const local = stats.pools.find((p: { pool: string }) => p.pool === 'local');
    expect(local.latency_ms.p50).toEqual(expect.any(Number));
    expect(local.history.bucket_secs).toBe(10);
    expect(stats.recent_errors[0]).toMatchObject({
      status: 404,
      code: 'model_not_found',
      pool: null,
      correlation_id: 'http-spec-corr-1',
      model: 'nobody-has-this',
    });
    worker.close();
  });

  it('a build without the page answers 503 at /dashboard saying how to build it; the rest of the gateway is unaffected', async () => {
    const other = await startGateway();
    try {
      // As if dist/dashboard/public had not been copied: the files the module read at boot are gone.
      (other.app.get(DashboardAssets) as unknown as { files: Map<string, unknown> }).files.clear();
      const res = await fetch(`${other.url}/dashboard`);
      expect(res.status).toBe(503);
      expect(await res.text()).toContain('npm run build');
      expect((await fetch(`${other.url}/dashboard/assets/app.js`)).status).toBe(404);
      expect((await fetch(`${other.url}/health/live`)).status).toBe(200);
    } finally {
      await other.close();
    }
  });
});

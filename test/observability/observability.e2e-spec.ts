import { LifecycleState } from '../../src/observability/lifecycle-state';
import { startGateway, TEST_ADMIN_TOKEN, TEST_SECRET, TestGateway } from '../support/gateway';
import { parsePrometheusText, SWITCHBOARD_FAMILIES } from './prometheus-text';

const UUID_V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

describe('observability endpoints on the real gateway', () => {
  let gw: TestGateway;
  let second: TestGateway;
  beforeAll(async () => {
    gw = await startGateway();
    // A second gateway in the same process must boot too (per-app metrics registry).
    second = await startGateway();
  });
  afterAll(async () => {
    await Promise.all([gw?.close(), second?.close()]);
  });

  it('serves parseable /metrics with every switchboard_* family, without auth, on both gateways', async () => {
    for (const { url } of [gw, second]) {
      const res = await fetch(`${url}/metrics`);
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
      const families = parsePrometheusText(await res.text());
      for (const [name, type] of Object.entries(SWITCHBOARD_FAMILIES)) {
        expect({ name, type: families.get(name)?.type }).toEqual({ name, type });
      }
      expect(families.get('process_cpu_user_seconds_total')?.type).toBe('counter');
      expect(families.get('nodejs_eventloop_lag_seconds')?.type).toBe('gauge');
    }
  });

  it('answers /health/live with 200', async () => {
    const res = await fetch(`${gw.url}/health/live`);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ status: 'ok' });
  });

  it('summarises /health without secrets or worker addresses', async () => {
    const res = await fetch(`${gw.url}/health`);
    expect(res.status).toBe(200);
    const text = await res.text();
    const body = JSON.parse(text);
    expect(Object.keys(body).sort()).toEqual([
      'modelsLoaded',
      'models_loaded',
      'providers',
      'queueDepth',
      'queue_depth',
      'status',
      'uptime',
      'uptime_secs',
      'version',
      'workers_connected',
    ]);
    expect(body).toMatchObject({ status: 'healthy', version: expect.stringMatching(/^\d+\.\d+\.\d+/) });
    expect(typeof body.uptime_secs).toBe('number');
    expect(typeof body.workers_connected).toBe('number');
    expect(typeof body.queue_depth).toBe('number');
    expect(Array.isArray(body.providers)).toBe(true);
    for (const p of body.providers) expect(Object.keys(p).sort()).toEqual(['enabled', 'max_queue_len', 'name', 'queue_depth', 'workers']);
    expect(text).not.toContain(TEST_SECRET);
    expect(text).not.toContain(TEST_ADMIN_TOKEN);
    expect(text).not.toMatch(/scrypt\$|127\.0\.0\.1/);
  });

  it('echoes X-Correlation-Id when sent and mints a UUIDv4 when not, on /health and on a 404', async () => {
    for (const path of ['/health', '/no-such-route']) {
      const echoed = await fetch(`${gw.url}${path}`, { headers: { 'X-Correlation-Id': 'trace-42' } });
      expect(echoed.headers.get('x-correlation-id')).toBe('trace-42');
      const minted = await fetch(`${gw.url}${path}`);
      expect(minted.headers.get('x-correlation-id')).toMatch(UUID_V4);
    }
    expect((await fetch(`${gw.url}/no-such-route`)).status).toBe(404);
  });

  // Last: it starts the shutdown of `second`.
  it('answers /health/ready with 200, then 503 as soon as shutdown begins', async () => {
    const ready = await fetch(`${second.url}/health/ready`);
    expect(ready.status).toBe(200);
    expect(await ready.json()).toMatchObject({ status: 'ok', details: { database: { status: 'up' }, lifecycle: { status: 'up' } } });

    second.app.get(LifecycleState).beginShutdown();
    const draining = await fetch(`${second.url}/health/ready`);
    expect(draining.status).toBe(503);
    expect(await draining.json()).toMatchObject({ status: 'shutting_down' });
    expect((await fetch(`${second.url}/health/live`)).status).toBe(200);
  });
});

import { startGateway, TestGateway } from '../support/gateway';
import { ScriptedWorker } from '../support/scripted-worker';
import { chat, eventually, post } from '../support/http';
import { parsePrometheusText, Sample } from '../observability/prometheus-text';

/** What an operator sees on /metrics after real traffic through the relay. */
describe('relay metrics', () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startGateway();
  });
  afterAll(() => gw.close());

  async function samples(family: string): Promise<Sample[]> {
    const text = await (await fetch(`${gw.url}/metrics`)).text();
    return parsePrometheusText(text).get(family)?.samples ?? [];
  }
  const value = (list: Sample[], labels: Record<string, string>, name?: string) =>
    list.find((s) => (!name || s.name === name) && Object.entries(labels).every(([k, v]) => s.labels[k] === v))?.value;

  it("exposes every provider's gauges at zero before any traffic", async () => {
    expect(value(await samples('switchboard_queue_depth'), { provider: 'local' })).toBe(0);
    expect(value(await samples('switchboard_workers_connected'), { provider: 'local' })).toBe(0);
    expect(value(await samples('switchboard_worker_slots'), { provider: 'local', state: 'free' })).toBe(0);
  });

  it('counts requests, tokens, workers, rejections and auth failures', async () => {
    const { worker } = await ScriptedWorker.register(gw.workerUrl, { models: ['metered'], max_concurrent: 2 });
    expect(value(await samples('switchboard_workers_connected'), { provider: 'local' })).toBe(1);
    expect(value(await samples('switchboard_worker_slots'), { provider: 'local', state: 'free' })).toBe(2);

    const pending = post(gw.url, '/v1/chat/completions', chat('metered'), { 'x-tenant-id': 'team-a' });
    const req = await worker.next('request');
    expect(value(await samples('switchboard_worker_slots'), { provider: 'local', state: 'busy' })).toBe(1);
    worker.complete(req.request_id, { ok: true }, 200, { token_counts: { prompt_tokens: 11, completion_tokens: 7, total_tokens: 18 } });
    expect((await pending).status).toBe(200);

    const requests = await samples('switchboard_requests_total');
    expect(value(requests, { provider: 'local', model: 'metered', endpoint: '/v1/chat/completions', status: '200', tenant: 'team-a' })).toBe(1);
    const tokens = await samples('switchboard_tokens_total');
    expect(value(tokens, { model: 'metered', tenant: 'team-a', kind: 'prompt' })).toBe(11);
    expect(value(tokens, { model: 'metered', tenant: 'team-a', kind: 'completion' })).toBe(7);
    expect(value(await samples('switchboard_request_duration_seconds'), { model: 'metered' }, 'switchboard_request_duration_seconds_count')).toBe(1);

    expect((await post(gw.url, '/v1/chat/completions', chat('unknown-model'))).status).toBe(404);
    expect(value(await samples('switchboard_rejections_total'), { code: 'model_not_found' })).toBe(1);

    const intruder = await ScriptedWorker.connect(gw.workerUrl, { secret: 'wrong' });
    await intruder.closed;
    await eventually(async () => value(await samples('switchboard_worker_auth_failures_total'), { reason: 'bad_secret' }) === 1);
    worker.close();
    await eventually(async () => value(await samples('switchboard_workers_connected'), { provider: 'local' }) === 0);
  });

  it('observes a queue wait of 0 for a request a worker takes at once, so the percentiles cover every request', async () => {
    const { worker } = await ScriptedWorker.register(gw.workerUrl, { models: ['instant'], max_concurrent: 1 });
    const countBefore = value(await samples('switchboard_queue_wait_seconds'), { provider: 'local' }, 'switchboard_queue_wait_seconds_count') ?? 0;
    const zeroBefore = value(await samples('switchboard_queue_wait_seconds'), { provider: 'local', le: '0.001' }, 'switchboard_queue_wait_seconds_bucket') ?? 0;
    const pending = post(gw.url, '/v1/chat/completions', chat('instant'));
    const req = await worker.next('request');
    worker.complete(req.request_id, {});
    await pending;
    const after = await samples('switchboard_queue_wait_seconds');
    expect(value(after, { provider: 'local' }, 'switchboard_queue_wait_seconds_count')).toBe(countBefore + 1);
    expect(value(after, { provider: 'local', le: '0.001' }, 'switchboard_queue_wait_seconds_bucket')).toBe(zeroBefore + 1);
    worker.close();
  });
});

describe('access log', () => {
  it('one line per request names its tenant, served model, pool, worker, queue position and wait; debug lines trace queueing and placement', async () => {
    const lines: Array<Record<string, any>> = [];
    const destination = { write: (chunk: string) => void lines.push(JSON.parse(chunk)) };
    const gw = await startGateway({ LOG_LEVEL: 'debug' }, { logDestination: destination });
    try {
      const { worker, ack } = await ScriptedWorker.register(gw.workerUrl, { models: ['logged'], max_concurrent: 1 });
      const first = post(gw.url, '/v1/chat/completions', chat('logged'), { 'x-tenant-id': 'team-log', 'x-correlation-id': 'trace-at-once' });
      const r1 = await worker.next('request');
      const second = post(gw.url, '/v1/chat/completions', chat('logged'), { 'x-tenant-id': 'team-log', 'x-correlation-id': 'trace-queued' });
      await eventually(() => lines.some((l) => l.msg === 'request queued' && l.correlation_id === 'trace-queued'));
      worker.complete(r1.request_id, {});
      const r2 = await worker.next('request');
      worker.complete(r2.request_id, {});
      await Promise.all([first, second]);
      const access = await eventually(() => lines.find((l) => l.msg === 'request completed' && l.correlation_id === 'trace-queued'));
      expect(access).toMatchObject({
        tenant: 'team-log',
        model: 'logged',
        served_model: 'logged',
        pool: 'local',
        worker_id: ack.worker_id,
        queue_position: 1,
        status: 200,
      });
      expect(access!.queue_wait_ms).toBeGreaterThanOrEqual(0);
      expect(lines.find((l) => l.msg === 'request queued' && l.correlation_id === 'trace-queued')).toMatchObject({ queue_position: 1 });
      expect(lines.find((l) => l.msg === 'request placed' && l.correlation_id === 'trace-queued')).toMatchObject({
        pool: 'local',
        worker_id: ack.worker_id,
        queue_position: 1,
      });
      // Placed at once: the placement line says so with 0 (not only requests that waited carry it).
      expect(lines.find((l) => l.msg === 'request placed' && l.correlation_id === 'trace-at-once')).toMatchObject({ queue_position: 0, queue_wait_ms: 0 });
      const atOnce = await eventually(() => lines.find((l) => l.msg === 'request completed' && l.correlation_id === 'trace-at-once'));
      expect(atOnce).toMatchObject({ queue_position: 0, queue_wait_ms: 0 });
      worker.close();
    } finally {
      await gw.close();
    }
  });
});

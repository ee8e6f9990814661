import { startGateway, TestGateway, TEST_ADMIN_TOKEN } from '../support/gateway';
import { ScriptedWorker } from '../support/scripted-worker';
import { admin, chat, post } from '../support/http';
import { metricValue, workerView, writeConfig } from '../support/routing';

const WATCHDOG = 'switchboard_watchdog_total';

function sse(obj: unknown): string {
  return `data: ${JSON.stringify(obj)}\n\n`;
}

describe('watchdogs: first byte and stalled streams (real ports, WebSocket workers)', () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startGateway({
      CONFIG_FILE: writeConfig(`
providers:
  - name: local
    secret: test-worker-secret
routing:
  first_byte_timeout_secs: 0.6
  stream_idle_timeout_secs: 0.8
`),
    });
  });
  afterAll(() => gw.close());

  it('first byte: a silent worker is sent cancel(timeout) and charged a failure; the client gets the other worker’s answer', async () => {
    const silent = await ScriptedWorker.register(gw.workerUrl, { models: ['wd-fb'], max_concurrent: 1 });
    const before = await metricValue(gw, WATCHDOG, { kind: 'first_byte' });
    const started = Date.now();
    const pending = post(gw.url, '/v1/chat/completions', chat('wd-fb'));
    const first = await silent.worker.next('request');
    const other = await ScriptedWorker.register(gw.workerUrl, { models: ['wd-fb'], max_concurrent: 1 });
    const cancel = await silent.worker.next('cancel');
    expect(cancel).toMatchObject({ request_id: first.request_id, reason: 'timeout' });
    expect(Date.now() - started).toBeGreaterThanOrEqual(550);
    const second = await other.worker.next('request');
    expect(second.request_id).toBe(first.request_id);
    other.worker.complete(second.request_id, { id: 'from-other', object: 'chat.completion', choices: [] });
    const res = await pending;
    expect(res.status).toBe(200);
    expect(res.json.id).toBe('from-other');
    expect(await workerView(gw, silent.ack.worker_id)).toMatchObject({ consecutive_failures: 1 });
    expect(await metricValue(gw, WATCHDOG, { kind: 'first_byte' })).toBe(before + 1);
    const stats = await admin(gw.url, 'GET', '/admin/stats', TEST_ADMIN_TOKEN);
    expect(stats.json.watchdogs.first_byte).toBeGreaterThanOrEqual(1);
    silent.worker.close();
    other.worker.close();
  });

  it('stall: a stream with no chunk for the idle timeout ends with one retriable DECODE_TIMEOUT SSE error event, and the worker gets cancel(timeout)', async () => {
    const { worker, ack } = await ScriptedWorker.register(gw.workerUrl, { models: ['wd-stall'], max_concurrent: 1 });
    const before = await metricValue(gw, WATCHDOG, { kind: 'stream_idle' });
    const pending = fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(chat('wd-stall', { stream: true })),
    });
    const req = await worker.next('request');
    worker.chunk(req.request_id, sse({ choices: [{ index: 0, delta: { content: 'partial' } }] }));
    const res = await pending;
    const reader = res.body!.getReader();
    const firstRead = await reader.read();
    const lastChunkAt = Date.now();
    expect(Buffer.from(firstRead.value!).toString()).toContain('partial');
    let rest = '';
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      rest += Buffer.from(value).toString();
    }
    const endedAfter = Date.now() - lastChunkAt;
    expect(endedAfter).toBeGreaterThanOrEqual(700);
    expect(endedAfter).toBeLessThan(5000);
    const events = rest.split('\n\n').filter(Boolean);
    expect(events).toHaveLength(1);
    expect(events[0]).toMatch(/^event: error\ndata: /);
    const data = JSON.parse(events[0].split('data: ')[1]);
    expect(data.error).toMatchObject({ code: 'request_timeout', retriable: true });
    expect(data.kind ?? data.error.kind).toBe('DECODE_TIMEOUT');
    expect(await worker.next('cancel')).toMatchObject({ request_id: req.request_id, reason: 'timeout' });
    expect(await workerView(gw, ack.worker_id)).toMatchObject({ consecutive_failures: 1 });
    expect(await metricValue(gw, WATCHDOG, { kind: 'stream_idle' })).toBe(before + 1);
    const stats = await admin(gw.url, 'GET', '/admin/stats', TEST_ADMIN_TOKEN);
    expect(stats.json.watchdogs.stream_idle).toBeGreaterThanOrEqual(1);
    worker.close();
  });
});

import { MetricsListener } from '../../src/health/metrics-listener';
import { startGateway } from '../support/gateway';
import { eventually } from '../support/http';
import { ScriptedWorker } from '../support/scripted-worker';
import { parsePrometheusText } from './prometheus-text';

/** Issue 22: METRICS_PORT, ENABLE_METRICS, and the gauges read from the workers' runner documents. */
describe('GET /metrics: its own listener, off switch, runner gauges', () => {
  it('METRICS_PORT serves /metrics on a listener of its own; the client port answers it 404', async () => {
    const gw = await startGateway({ METRICS_PORT: '0' });
    try {
      const port = gw.app.get(MetricsListener).port;
      expect(port).toBeGreaterThan(0);
      const res = await fetch(`http://127.0.0.1:${port}/metrics`);
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
      expect(parsePrometheusText(await res.text()).get('switchboard_requests_total')?.type).toBe('counter');
      expect((await fetch(`http://127.0.0.1:${port}/health`)).status).toBe(404);
      expect((await fetch(`${gw.url}/metrics`)).status).toBe(404);
      expect((await fetch(`${gw.url}/health`)).status).toBe(200);
    } finally {
      await gw.close();
    }
  });

  it('ENABLE_METRICS=false alone turns /metrics off on the client port', async () => {
    const gw = await startGateway({ ENABLE_METRICS: 'false' });
    try {
      expect((await fetch(`${gw.url}/metrics`)).status).toBe(404);
      expect((await fetch(`${gw.url}/health`)).status).toBe(200);
    } finally {
      await gw.close();
    }
  });

  it('ENABLE_METRICS=false turns the endpoint off', async () => {
    const gw = await startGateway({ ENABLE_METRICS: 'false', METRICS_PORT: '0' });
    try {
      expect((await fetch(`${gw.url}/metrics`)).status).toBe(404);
      expect(gw.app.get(MetricsListener).port).toBeUndefined();
    } finally {
      await gw.close();
    }
  });

  it("exports GPU memory and KV cache from the workers' runner documents, refreshed ones too", async () => {
    const gw = await startGateway({});
    try {
      const doc = (usedMB: number, kv: number) => ({ resources: { gpuIds: [0], gpuMemoryUsedMB: usedMB, kvCacheUtilization: kv } });
      const { worker } = await ScriptedWorker.register(gw.workerUrl, {
        models: ['gauge-model'],
        worker_name: 'gpu-box',
        features: ['runner_capabilities'],
        runner_capabilities: doc(1000, 0.25),
      });
      const scrape = async () => parsePrometheusText(await (await fetch(`${gw.url}/metrics`)).text());
      const gpu = (f: Awaited<ReturnType<typeof scrape>>) => f.get('switchboard_gpu_memory_used_bytes')?.samples.find((s) => s.labels.worker === 'gpu-box');
      const families = await scrape();
      expect(gpu(families)).toMatchObject({ labels: { pool: 'local', worker: 'gpu-box', gpu: '0' }, value: 1000 * 1024 * 1024 });
      expect(families.get('switchboard_kv_cache_usage_ratio')?.samples).toContainEqual(
        expect.objectContaining({ labels: { pool: 'local', worker: 'gpu-box' }, value: 0.25 }),
      );
      worker.send({ type: 'runner_capabilities', runner_capabilities: doc(2000, 0.5) });
      await eventually(async () => gpu(await scrape())?.value === 2000 * 1024 * 1024);
      worker.close();
      await worker.closed;
      await eventually(async () => gpu(await scrape()) === undefined);
    } finally {
      await gw.close();
    }
  });
});

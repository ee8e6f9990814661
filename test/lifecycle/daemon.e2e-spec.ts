import OpenAI from 'openai';
import { workerConfig } from '../../src/worker/config';
import { WorkerDaemon } from '../../src/worker/daemon';
import { TEST_SECRET } from '../support/gateway';
import { eventually } from '../support/http';
import { FakeBackend } from '../worker/support/fake-backend';
import { FakeOllama } from '../worker/support/fake-lifecycle';
import { LifecycleGateway, startLifecycleGateway, taskWhen } from './support';

/**
 * The whole chain: operator → real gateway (governance, relay) → real switchboard-worker daemon →
 * a fake Ollama on a loopback port. Nothing scripted in between.
 */
describe('model lifecycle through the real worker daemon', () => {
  let gw: LifecycleGateway;
  let backend: FakeBackend;
  let daemon: WorkerDaemon;

  beforeEach(async () => {
    gw = await startLifecycleGateway({ HEARTBEAT_INTERVAL_SECS: '0.2', HEARTBEAT_TIMEOUT_SECS: '5' });
    backend = new FakeBackend();
    await backend.start();
  });

  afterEach(async () => {
    void daemon.stop();
    void daemon.stop();
    await daemon.waitForExit();
    await gw.close();
    await backend.close();
  });

  it('load pulls and loads the model on Ollama, then chat reaches it; unload and cache flush report what Ollama can and cannot do', async () => {
    const ollama = new FakeOllama(backend, { 'llama3:latest': 5_000_000_000 });
    ollama.pulls.set('qwen2.5:7b', { layers: [{ digest: 'sha256:0123456789abcdef0123', total: 4_000_000_000 }] });
    daemon = new WorkerDaemon(
      workerConfig({
        workerSecret: TEST_SECRET,
        proxyUrl: gw.url,
        backendUrl: backend.url,
        workerName: 'ollama-1',
        models: [],
        discoverModels: true,
        probe: true,
        heartbeatIntervalMs: 200,
        reconnectMinMs: 50,
        reconnectMaxMs: 200,
        drainTimeoutMs: 2_000,
      }),
      { lifecyclePollMs: 5, lifecycleProgressIntervalMs: 0 },
    );
    const registered = new Promise<void>((resolve) => daemon.once('registered', () => resolve()));
    daemon.start();
    await registered;
    const [worker] = (await gw.get('/admin/workers')).json.data;
    expect(worker.models).toEqual(['llama3:latest']);

    const load = await gw.call('/v1/models/load', {
      modelId: 'qwen2.5:7b',
      workerId: worker.id,
      verifiedOpToken: gw.token({ operation: 'model-load', modelId: 'qwen2.5:7b', workerId: worker.id }),
    });
    expect(load.status).toBe(202);
    const done = await taskWhen(gw, load.json.taskId, (t) => t.status !== 'loading');
    expect(done).toMatchObject({ status: 'completed', progress: 1, gpuMemoryUsedMB: Math.round(4_000_000_000 / (1 << 20)) });
    await eventually(async () => (await gw.get(`/admin/workers/${worker.id}`)).json.models.includes('qwen2.5:7b'));
    const openai = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: 'k', maxRetries: 0 });
    const answer = await openai.chat.completions.create({ model: 'qwen2.5:7b', messages: [{ role: 'user', content: 'hi' }] });
    expect(answer.choices[0].message.content).toBeTruthy();
    expect(backend.relayed.some((r) => r.path === '/v1/chat/completions' && JSON.parse(r.body).model === 'qwen2.5:7b')).toBe(true);

    const unload = await gw.call('/v1/models/unload', {
      modelId: 'qwen2.5:7b',
      workerId: worker.id,
      verifiedOpToken: gw.token({ operation: 'model-unload', modelId: 'qwen2.5:7b', workerId: worker.id }),
    });
    expect(unload.status).toBe(200);
    expect(unload.json).toMatchObject({ modelId: 'qwen2.5:7b', kvCacheFlushed: true, workers: [{ workerId: worker.id, status: 'completed' }] });
    expect(ollama.running.has('qwen2.5:7b')).toBe(false);

    const flush = await gw.call('/v1/cache/flush', {
      scope: 'all',
      workerId: worker.id,
      verifiedOpToken: gw.token({ operation: 'cache-flush', scope: 'all', workerId: worker.id }),
    });
    expect(flush.status).toBe(502);
    expect(flush.json.error).toMatchObject({ code: 'lifecycle_failed', workers: [{ status: 'unsupported', error: expect.stringMatching(/^unsupported: /) }] });
  });
});

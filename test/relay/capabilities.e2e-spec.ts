import { LifecycleState } from '../../src/observability/lifecycle-state';
import { startGateway, TestGateway } from '../support/gateway';
import { ScriptedWorker } from '../support/scripted-worker';
import { writeConfig } from '../support/routing';
import { admin } from '../support/http';
import { TEST_ADMIN_TOKEN } from '../support/gateway';

const CONFIG = `
providers:
  - name: local
    secret: test-worker-secret
  - name: gpu-east
    secret: east-secret
    models: [declared-only, east-llava]
    capabilities:
      east-llava: {vision: true}
`;

async function register(gw: TestGateway, frame: Record<string, unknown>, provider?: { provider: string; secret: string }) {
  const w = await ScriptedWorker.connect(gw.workerUrl, provider ?? {});
  w.send({ type: 'register', protocol_version: '2026-04-bridge-v1', max_concurrent: 2, ...frame } as { type: string });
  await w.next('register_ack');
  return w;
}

describe('GET /v1/capabilities', () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startGateway({ CONFIG_FILE: writeConfig(CONFIG), DEFAULT_RATE_LIMIT: '60req/min' });
  });
  afterAll(() => gw.close());

  it('describes each pool from the workers that registered: engines, models and context, slots, workloads, queue, features', async () => {
    const llama = await register(gw, {
      worker_name: 'llama-box',
      models: ['llama3:8b', 'qwen2.5:7b'],
      max_concurrent: 4,
      runner: { type: 'llama-server', version: 'b4500' },
      capabilities: { 'llama3:8b': { context_length: 8192, tools: true }, 'qwen2.5:7b': { context_length: 32768 } },
      endpoints: ['/v1/chat/completions', '/v1/completions'],
    });
    const runnerDoc = { api_version: '1.0.0', resources: { gpus: [{ id: 0, vram_free_mb: 8000 }] }, queue: { depth: 2 } };
    const vllm = await register(
      gw,
      {
        worker_name: 'vllm-box',
        models: ['east-llava'],
        runner: { type: 'vllm', version: '0.9.1' },
        runner_capabilities: runnerDoc,
        features: ['model_lifecycle'],
      },
      { provider: 'gpu-east', secret: 'east-secret' },
    );
    const res = await fetch(`${gw.url}/v1/capabilities`);
    expect(res.status).toBe(200);
    const doc: any = await res.json();
    expect(doc.api_version).toMatch(/^\d+\.\d+\.\d+/);
    const local = doc.pools.find((p: { id: string }) => p.id === 'local');
    expect(local).toMatchObject({
      engines: [{ type: 'llama-server', version: 'b4500' }],
      ctx_max: 32768,
      slots: { total: 4, busy: 0, free: 4 },
      workers: 1,
      supported_workloads: ['/v1/chat/completions', '/v1/completions'],
      queue: { depth: 0, max_depth: 100, avg_wait_ms: 0, p95_wait_ms: 0 },
      rate_limits: { default_rpm: 60, per_tenant: true },
      health: { enabled: true, ready: true },
    });
    expect(local.models.loaded).toEqual([
      { id: 'llama3:8b', context_length: 8192, capabilities: ['tools'], workers: 1 },
      { id: 'qwen2.5:7b', context_length: 32768, capabilities: [], workers: 1 },
    ]);
    expect(local.features).toEqual(expect.arrayContaining(['streaming', 'cancellation', 'anthropic', 'tools', 'pinning', 'completions', 'tasks']));
    // Only a pool with a worker that negotiated lifecycle operations offers them.
    expect(local.features).not.toContain('model_lifecycle');
    const east = doc.pools.find((p: { id: string }) => p.id === 'gpu-east');
    expect(east.engines).toEqual([{ type: 'vllm', version: '0.9.1' }]);
    expect(east.runners).toEqual([{ worker: 'vllm-box', capabilities: runnerDoc }]); // relayed as it is
    expect(local.runners).toBeUndefined();
    expect(east.models.loaded[0]).toMatchObject({ id: 'east-llava', capabilities: ['vision'] }); // declared by the provider
    expect(east.models.available).toEqual(['declared-only']);
    expect(east.features).toEqual(expect.arrayContaining(['vision', 'model_lifecycle']));
    llama.close();
    vllm.close();
  });

  it('is cached for at most 5 seconds, and answers 503 while the gateway shuts down', async () => {
    const first: any = await (await fetch(`${gw.url}/v1/capabilities`)).json();
    const w = await register(gw, { worker_name: 'late', models: ['late-model'] });
    const second: any = await (await fetch(`${gw.url}/v1/capabilities`)).json();
    expect(second.generated_at).toBe(first.generated_at); // same cached document
    w.close();
    const other = await startGateway();
    try {
      other.app.get(LifecycleState).beginShutdown();
      const res = await fetch(`${other.url}/v1/capabilities`);
      expect(res.status).toBe(503);
      expect(((await res.json()) as any).error).toMatchObject({ code: 'server_shutdown', retriable: true });
    } finally {
      await other.close();
    }
  });

  it('needs a client key when keys are required', async () => {
    const locked = await startGateway({ REQUIRE_API_KEYS: 'true' });
    try {
      const created = await admin(locked.url, 'POST', '/admin/keys', TEST_ADMIN_TOKEN, { name: 'discovery', tenant: 'ops' });
      expect(created.status).toBe(201);
      const without = await fetch(`${locked.url}/v1/capabilities`);
      expect(without.status).toBe(401);
      expect(((await without.json()) as any).error.code).toBe('invalid_api_key');
      const withKey = await fetch(`${locked.url}/v1/capabilities`, { headers: { authorization: `Bearer ${created.json.key}` } });
      expect(withKey.status).toBe(200);
    } finally {
      await locked.close();
    }
  });
});

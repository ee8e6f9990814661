import { mkdirSync, mkdtempSync, realpathSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { RunnerApiAdapter } from '../../src/worker/models/lifecycle/runner-api';
import { OperationContext, OperationFailed, Unsupported } from '../../src/worker/models/lifecycle/types';
import { VllmAdapter } from '../../src/worker/models/lifecycle/vllm';
import { AdapterBackend, flush, load, requestLines, startAdapterBackend, stopAdapterBackend, unload } from './support/adapter-backend';
import { FakeBackend } from './support/fake-backend';
import { FakeRunnerApi, FakeVllm } from './support/fake-lifecycle';

// Split from lifecycle-adapters.e2e-spec.ts (same top-level describe): the vLLM and runner API adapters.

describe('lifecycle adapters', () => {
  let backend: AdapterBackend;
  let b: FakeBackend;
  let ctx: OperationContext;
  let progress: number[];

  beforeEach(async () => {
    backend = await startAdapterBackend();
    ({ b, ctx, progress } = backend);
  });

  afterEach(() => stopAdapterBackend(backend));

  const calls = () => requestLines(b);

  describe('vLLM', () => {
    it('unloads the served model with POST /sleep?level=1 and loads it again with POST /wake_up', async () => {
      const vllm = new FakeVllm(b, 'llama3.1-8b');
      const adapter = new VllmAdapter();
      await adapter.unload(unload('llama3.1-8b'), ctx);
      expect(vllm.sleeping).toBe(true);
      expect(vllm.sleepLevels).toEqual(['1']);
      expect(await adapter.servable(['llama3.1-8b'], ctx.http, ctx.signal)).toEqual([]);
      await adapter.load(load('llama3.1-8b'), ctx);
      expect(vllm.sleeping).toBe(false);
      expect(calls()).toContain('POST /wake_up');
      expect(await adapter.servable(['llama3.1-8b'], ctx.http, ctx.signal)).toEqual(['llama3.1-8b']);
    });

    it('without dev mode: unload is unsupported (naming VLLM_SERVER_DEV_MODE), loading the running model needs nothing', async () => {
      const vllm = new FakeVllm(b, 'm');
      vllm.devMode = false;
      await expect(new VllmAdapter().unload(unload('m'), ctx)).rejects.toThrow(/VLLM_SERVER_DEV_MODE=1/);
      await expect(new VllmAdapter().unload(unload('m'), ctx)).rejects.toThrow(Unsupported);
      expect(await new VllmAdapter().load(load('m'), ctx)).toEqual({});
      await expect(new VllmAdapter().flush(flush('all'), ctx)).rejects.toThrow(/VLLM_SERVER_DEV_MODE=1/);
    });

    it('says unload is unsupported when vLLM runs without --enable-sleep-mode, and relays other sleep failures', async () => {
      const vllm = new FakeVllm(b, 'm');
      vllm.sleepMode = false;
      await expect(new VllmAdapter().unload(unload('m'), ctx)).rejects.toThrow(
        new Unsupported(
          'POST /sleep answered 500: Sleep mode is not enabled in the model config: sleep and wake-up need vLLM started with --enable-sleep-mode, and vLLM serves it only when started with VLLM_SERVER_DEV_MODE=1',
        ),
      );
      b.routes.set('POST /sleep', () => ({ status: 500, json: { error: { message: 'CUDA error: out of memory', type: 'InternalServerError', code: 500 } } }));
      await expect(new VllmAdapter().unload(unload('m'), ctx)).rejects.toThrow(new OperationFailed('POST /sleep answered 500: CUDA error: out of memory'));
    });

    // The worker checks each adapter on disk (realpath inside --lora-dir), so --lora-dir is a real directory here.
    let loraRoot: string;
    let loras: string;
    beforeEach(() => {
      loraRoot = mkdtempSync(join(tmpdir(), 'lora-adapters-'));
      loras = join(realpathSync(loraRoot), 'loras');
      for (const dir of ['acme/sql', 'sql', 'missing']) mkdirSync(join(loras, dir), { recursive: true });
    });
    afterEach(() => rmSync(loraRoot, { recursive: true, force: true }));

    it('loads a LoRA adapter by name from --lora-dir and unloads it; vLLM then lists it under its base model', async () => {
      const vllm = new FakeVllm(b, 'llama3.1-8b');
      vllm.adapterDirs.add(`${loras}/acme/sql`);
      const adapter = new VllmAdapter(loras);
      await adapter.load(load('acme/sql'), ctx);
      expect(b.requests.find((r) => r.path === '/v1/load_lora_adapter')?.body).toBe(`{"lora_name":"acme/sql","lora_path":"${loras}/acme/sql"}`);
      expect([...vllm.loras.keys()]).toEqual(['acme/sql']);
      // Loading it again is nothing to do: it is listed.
      await adapter.load(load('acme/sql'), ctx);
      expect(calls().filter((c) => c === 'POST /v1/load_lora_adapter')).toHaveLength(1);
      await adapter.unload(unload('acme/sql'), ctx);
      expect(b.requests.find((r) => r.path === '/v1/unload_lora_adapter')?.body).toBe('{"lora_name":"acme/sql"}');
      expect(vllm.loras.size).toBe(0);
      expect(vllm.sleeping).toBe(false);
    });

    it('refuses LoRA loads it cannot do: no --lora-dir, a name leaving the directory, runtime updates off; relays a missing adapter', async () => {
      const vllm = new FakeVllm(b, 'base');
      await expect(new VllmAdapter().load(load('sql'), ctx)).rejects.toThrow(/--lora-dir, which is not set/);
      await expect(new VllmAdapter(loras).load(load('../etc'), ctx)).rejects.toThrow(OperationFailed);
      // On this host but not where vLLM looks: vLLM's own answer is relayed.
      await expect(new VllmAdapter(loras).load(load('missing'), ctx)).rejects.toThrow(
        new OperationFailed(`POST /v1/load_lora_adapter answered 404: No adapter found for ${loras}/missing`),
      );
      // Not on this host at all: the worker refuses it itself, vLLM is not asked.
      await expect(new VllmAdapter(loras).load(load('absent'), ctx)).rejects.toThrow(/no LoRA adapter "absent" in --lora-dir/);
      vllm.runtimeLora = false;
      await expect(new VllmAdapter(loras).load(load('sql'), ctx)).rejects.toThrow(/VLLM_ALLOW_RUNTIME_LORA_UPDATING=True/);
      expect(calls().filter((c) => c.includes('lora') && c.includes('../'))).toEqual([]);
      expect(b.requests.filter((r) => r.body.includes('absent'))).toEqual([]);
    });

    it('flushes with POST /reset_prefix_cache for scope all or model, and refuses tenant and tag', async () => {
      const vllm = new FakeVllm(b, 'm');
      await new VllmAdapter().flush(flush('all'), ctx);
      await new VllmAdapter().flush(flush('model', { model_id: 'm' }), ctx);
      expect(vllm.prefixResets).toBe(2);
      await expect(new VllmAdapter().flush(flush('tag', { tag: 'x' }), ctx)).rejects.toThrow(Unsupported);
    });
  });

  describe('runner API', () => {
    const token = 'eyJvcFRva2VuIjp7fX0.sig';

    it('forwards the load as is with the token, polls the task and relays its progress until completed', async () => {
      const runner = new FakeRunnerApi(b, [], token);
      const figures = await new RunnerApiAdapter().load(
        load('meta-llama/Llama-3.1-70B-Instruct', {
          quantization: 'awq-4bit',
          max_context_length: 32768,
          gpu_memory_budget_mb: 40000,
          evict_model: 'small',
          verified_op_token: token,
        }),
        ctx,
      );
      expect(runner.received).toEqual([
        {
          path: '/v1/models/load',
          body: {
            modelId: 'meta-llama/Llama-3.1-70B-Instruct',
            quantization: 'awq-4bit',
            maxContextLength: 32768,
            gpuMemoryBudgetMB: 40000,
            evictModel: 'small',
            verifiedOpToken: token,
          },
        },
      ]);
      expect(calls().filter((c) => c.startsWith('GET /v1/models/load/'))).toEqual([
        'GET /v1/models/load/load-1',
        'GET /v1/models/load/load-1',
        'GET /v1/models/load/load-1',
      ]);
      expect(progress).toEqual([0, 0.25, 0.75]);
      expect(figures).toEqual({ gpu_memory_used_mb: 38500 });
      expect([...runner.loaded]).toEqual(['meta-llama/Llama-3.1-70B-Instruct']);
    });

    it('fails when the backend fails the task or rejects the token', async () => {
      const runner = new FakeRunnerApi(b, [], token);
      runner.loadScript = { progress: [0.5], outcome: { status: 'failed', error: 'CUDA out of memory' } };
      await expect(new RunnerApiAdapter().load(load('m', { verified_op_token: token }), ctx)).rejects.toThrow(
        'the backend failed the load: CUDA out of memory',
      );
      await expect(new RunnerApiAdapter().load(load('m', { verified_op_token: 'forged' }), ctx)).rejects.toThrow(
        new OperationFailed('POST /v1/models/load answered 401: verifiedOpToken signature invalid'),
      );
    });

    it('forwards unload and flush and relays their figures', async () => {
      const runner = new FakeRunnerApi(b, ['m'], token);
      expect(await new RunnerApiAdapter().unload({ ...unload('m'), verified_op_token: token }, ctx)).toEqual({ gpu_memory_freed_mb: 8200 });
      expect(await new RunnerApiAdapter().flush(flush('tenant', { tenant_id: 'community-x', verified_op_token: token }), ctx)).toEqual({
        entries_removed: 1234,
        memory_freed_mb: 3500,
      });
      expect(runner.received.map((r) => r.body)).toEqual([
        { modelId: 'm', verifiedOpToken: token },
        { scope: 'tenant', tenantId: 'community-x', verifiedOpToken: token },
      ]);
    });

    it("says unsupported when the backend has no such route (a framework's 404), failed when its handler answers 404", async () => {
      b.routes.set('POST /v1/cache/flush', () => ({ status: 404, json: { detail: 'Not Found' } }));
      b.routes.set('POST /v1/models/unload', () => ({ status: 404, text: 'Cannot POST /v1/models/unload' }));
      b.routes.set('POST /v1/models/load', () => ({ status: 404, json: { error: 'model meta-llama/x not found on the hub' } }));
      await expect(new RunnerApiAdapter().flush(flush('all'), ctx)).rejects.toThrow(Unsupported);
      await expect(new RunnerApiAdapter().unload(unload('m'), ctx)).rejects.toThrow(Unsupported);
      await expect(new RunnerApiAdapter().load(load('meta-llama/x'), ctx)).rejects.toThrow(
        new OperationFailed('POST /v1/models/load answered 404: model meta-llama/x not found on the hub'),
      );
    });
  });
});

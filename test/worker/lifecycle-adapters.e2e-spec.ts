import { OllamaAdapter } from '../../src/worker/models/lifecycle/ollama';
import { LlamaServerAdapter } from '../../src/worker/models/lifecycle/llama-server';
import { OperationContext, OperationFailed, Unsupported } from '../../src/worker/models/lifecycle/types';
import { AdapterBackend, flush, load, requestLines, startAdapterBackend, stopAdapterBackend, unload } from './support/adapter-backend';
import { FakeBackend } from './support/fake-backend';
import { FakeLlamaRouter, FakeOllama, RouterModel } from './support/fake-lifecycle';

/**
 * Each lifecycle adapter against a fake backend that imitates the real endpoints (a real HTTP
 * server on loopback): what it asks of the backend, in which order, and what it reports.
 * The vLLM and runner API adapters are in lifecycle-adapters-vllm-runner-api.e2e-spec.ts.
 */
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

  describe('Ollama', () => {
    it('pulls a missing model with its streamed progress, then loads it with keep_alive -1 and num_ctx, and reports its VRAM', async () => {
      const ollama = new FakeOllama(b);
      ollama.pulls.set('qwen2.5:7b', {
        layers: [
          { digest: 'sha256:aaaaaaaaaaaaaaaaaaaa', total: 4_000_000_000 },
          { digest: 'sha256:bbbbbbbbbbbbbbbbbbbb', total: 1_000 },
        ],
      });
      const figures = await new OllamaAdapter().load(load('qwen2.5:7b', { max_context_length: 16384 }), ctx);

      expect(calls()).toEqual(['GET /api/tags', 'POST /api/pull', 'POST /api/generate', 'GET /api/ps']);
      expect(ollama.generated).toEqual([{ model: 'qwen2.5:7b', keep_alive: -1, stream: false, options: { num_ctx: 16384 } }]);
      expect(figures).toEqual({ gpu_memory_used_mb: Math.round(4_000_001_000 / (1 << 20)) });
      // The download takes 90 % of the progress, by bytes over all layers seen so far.
      expect(progress.slice(0, 5)).toEqual([0, 0.225, 0.45, 0.675, 0.9]);
      expect(progress.at(-1)).toBe(0.9);
      expect(Math.max(...progress)).toBeLessThanOrEqual(0.9);
    });

    it('loads a local model without pulling it, naming it with or without its :latest tag', async () => {
      const ollama = new FakeOllama(b, { 'llama3:latest': 5_000_000 });
      await new OllamaAdapter().load(load('llama3'), ctx);
      expect(calls()).not.toContain('POST /api/pull');
      expect([...ollama.running.keys()]).toEqual(['llama3:latest']);
    });

    it("fails with Ollama's own message when the pull reports an error, and loads nothing", async () => {
      const ollama = new FakeOllama(b);
      ollama.pulls.set('big:70b', { layers: [{ digest: 'sha256:cccccccccccccccccccc', total: 100 }], error: 'max retries exceeded: unexpected EOF' });
      await expect(new OllamaAdapter().load(load('big:70b'), ctx)).rejects.toThrow(
        new OperationFailed('Ollama could not pull "big:70b": max retries exceeded: unexpected EOF'),
      );
      await expect(new OllamaAdapter().load(load('nosuch'), ctx)).rejects.toThrow('pull model manifest: file does not exist');
      expect(ollama.generated).toEqual([]);
    });

    it('unloads with keep_alive 0 and reports the VRAM freed; a model not in memory needs nothing', async () => {
      const ollama = new FakeOllama(b, { 'llama3:latest': 5 << 20 });
      ollama.running.set('llama3:latest', 6 << 20);
      expect(await new OllamaAdapter().unload(unload('llama3:latest'), ctx)).toEqual({ gpu_memory_freed_mb: 6 });
      expect(ollama.generated).toEqual([{ model: 'llama3:latest', keep_alive: 0, stream: false }]);
      expect(ollama.running.size).toBe(0);
      expect(await new OllamaAdapter().unload(unload('llama3'), ctx)).toEqual({});
      expect(ollama.generated).toHaveLength(1);
    });

    it('unloads the evicted model first, and refuses what Ollama cannot do', async () => {
      const ollama = new FakeOllama(b, { 'a:latest': 1, 'b:latest': 1 });
      ollama.running.set('a:latest', 1);
      await new OllamaAdapter().load(load('b', { evict_model: 'a' }), ctx);
      expect(ollama.generated.map((g) => [g.model, g.keep_alive])).toEqual([
        ['a', 0],
        ['b', -1],
      ]);
      // A pull that fails leaves the model to evict where it was: the download needed no GPU memory.
      ollama.running.set('b:latest', 1);
      await expect(new OllamaAdapter().load(load('nosuch', { evict_model: 'b' }), ctx)).rejects.toThrow('pull model manifest: file does not exist');
      expect([...ollama.running.keys()]).toEqual(['b:latest']);
      await expect(new OllamaAdapter().load(load('b', { quantization: 'awq-4bit' }), ctx)).rejects.toThrow(Unsupported);
      await expect(new OllamaAdapter().flush()).rejects.toThrow(/no API to clear its KV cache/);
    });
  });

  describe('llama-server', () => {
    it('loads a router model: POST /models/load, then GET /models until loaded, relaying the download progress', async () => {
      const router = new FakeLlamaRouter(b, {
        gemma: {
          loadScript: [
            { state: 'downloading', done: 25, total: 100 },
            { state: 'downloading', done: 75, total: 100 },
            { state: 'loading' },
            { state: 'loaded' },
          ],
        },
      });
      expect(await new LlamaServerAdapter().load(load('gemma'), ctx)).toEqual({});
      expect(router.models.get('gemma')?.state).toBe('loaded');
      expect(b.requests.find((r) => r.path === '/models/load')?.body).toBe('{"model":"gemma"}');
      expect(progress).toEqual([0.225, 0.675, 0.9]);
    });

    it('reports a load whose instance died with its exit code, and a model the router does not know', async () => {
      new FakeLlamaRouter(b, { broken: { loadScript: [{ state: 'loading' }, { state: 'failed', exitCode: 1 }] } });
      await expect(new LlamaServerAdapter().load(load('broken'), ctx)).rejects.toThrow(
        'llama-server could not load "broken" (its instance exited with code 1)',
      );
      await expect(new LlamaServerAdapter().load(load('ghost'), ctx)).rejects.toThrow('llama-server does not know the model "ghost"');
    });

    it('fails as soon as a retried load fails again, or its instance stops before it has loaded', async () => {
      // Without an answer the adapter would poll until --lifecycle-timeout: the guard turns that into an error here.
      const guarded = { ...ctx, signal: AbortSignal.timeout(5_000) };
      new FakeLlamaRouter(b, {
        flaky: { state: 'unloaded', failed: true, exitCode: 1, loadScript: [{ state: 'failed', exitCode: 1 }] },
        quits: { loadScript: [{ state: 'loading' }, { state: 'unloaded' }] },
      });
      await expect(new LlamaServerAdapter().load(load('flaky'), guarded)).rejects.toThrow(
        'llama-server could not load "flaky" (its instance exited with code 1)',
      );
      await expect(new LlamaServerAdapter().load(load('quits'), guarded)).rejects.toThrow('llama-server stopped the instance of "quits" before it had loaded');
      expect(calls().filter((c) => c === 'POST /models/load')).toHaveLength(2);
    });

    it('loads a model the router is still downloading once the download has finished', async () => {
      const guarded = { ...ctx, signal: AbortSignal.timeout(5_000) };
      const router = new FakeLlamaRouter(b, { fresh: { state: 'downloading' } });
      (router.models.get('fresh') as RouterModel).pending = [
        { state: 'downloading', done: 25, total: 100 },
        { state: 'downloading', done: 50, total: 100 },
        { state: 'unloaded' },
      ];
      expect(await new LlamaServerAdapter().load(load('fresh'), guarded)).toEqual({});
      expect(router.models.get('fresh')?.state).toBe('loaded');
      expect(calls().filter((c) => c === 'POST /models/load')).toHaveLength(1);
      expect(progress[0]).toBe(0.45);
    });

    it('does not load a model that is already loaded, and unloads one until GET /models says unloaded', async () => {
      const router = new FakeLlamaRouter(b, { up: { state: 'loaded' } });
      await new LlamaServerAdapter().load(load('up'), ctx);
      expect(calls()).not.toContain('POST /models/load');
      await new LlamaServerAdapter().unload(unload('up'), ctx);
      expect(router.models.get('up')?.state).toBe('unloaded');
      expect(b.requests.find((r) => r.path === '/models/unload')?.body).toBe('{"model":"up"}');
      // Unloading it again is nothing to do.
      await new LlamaServerAdapter().unload(unload('up'), ctx);
      expect(calls().filter((c) => c === 'POST /models/unload')).toHaveLength(1);
    });

    it('flushes by erasing every slot of the loaded models only, and sums the tokens erased', async () => {
      new FakeLlamaRouter(b, { a: { state: 'loaded', slots: [100, 20] }, b: { state: 'loaded', slots: [3] }, cold: { state: 'unloaded', slots: [50] } });
      expect(await new LlamaServerAdapter().flush(flush('all'), ctx)).toEqual({ entries_removed: 123 });
      expect(calls().filter((c) => c.startsWith('POST /slots'))).toEqual([
        'POST /slots/0?action=erase&autoload=false',
        'POST /slots/1?action=erase&autoload=false',
        'POST /slots/0?action=erase&autoload=false',
      ]);
      expect(await new LlamaServerAdapter().flush(flush('model', { model_id: 'a' }), ctx)).toEqual({ entries_removed: 0 });
      // A model that is not running holds no cache, and asking its slots would load it.
      expect(await new LlamaServerAdapter().flush(flush('model', { model_id: 'cold' }), ctx)).toEqual({ entries_removed: 0 });
      expect(calls().some((c) => c.includes('model=cold'))).toBe(false);
    });

    it('says flush is unsupported without --slot-save-path, and by tenant or tag', async () => {
      const router = new FakeLlamaRouter(b, { a: { state: 'loaded', slots: [1] } });
      router.slotSavePath = false;
      await expect(new LlamaServerAdapter().flush(flush('all'), ctx)).rejects.toThrow(
        new Unsupported(
          "llama-server refuses slot actions: This server does not support slots action. Start it with `--slot-save-path` (erasing a slot's cache needs llama-server started with --slot-save-path)",
        ),
      );
      await expect(new LlamaServerAdapter().flush(flush('tenant', { tenant_id: 'x' }), ctx)).rejects.toThrow(Unsupported);
    });

    it('on a single-model llama-server: load and unload are unsupported, flush erases its slots', async () => {
      new FakeLlamaRouter(b, { only: { state: 'loaded', slots: [7, 8] } }, true);
      await expect(new LlamaServerAdapter().load(load('only'), ctx)).rejects.toThrow(/router mode/);
      await expect(new LlamaServerAdapter().unload(unload('only'), ctx)).rejects.toThrow(Unsupported);
      expect(await new LlamaServerAdapter().flush(flush('model', { model_id: 'only' }), ctx)).toEqual({ entries_removed: 15 });
      expect(calls().filter((c) => c.startsWith('POST /slots'))).toEqual(['POST /slots/0?action=erase', 'POST /slots/1?action=erase']);
    });

    it('counts as servable only loaded models when the router does not autoload', async () => {
      const router = new FakeLlamaRouter(b, { a: { state: 'loaded' }, b: { state: 'unloaded' }, c: { state: 'sleeping' } });
      const adapter = new LlamaServerAdapter();
      expect(await adapter.servable(['a', 'b', 'c'], ctx.http, ctx.signal)).toEqual(['a', 'b', 'c']);
      router.autoload = false;
      expect(await adapter.servable(['a', 'b', 'c'], ctx.http, ctx.signal)).toEqual(['a', 'c']);
    });

    it('keeps advertising what GET /models does not show as down (no list, an odd answer, a model it does not name)', async () => {
      const router = new FakeLlamaRouter(b, { a: { state: 'loaded' }, b: { state: 'unloaded' } });
      router.autoload = false;
      const adapter = new LlamaServerAdapter();
      expect(await adapter.servable(['a', 'b', 'x'], ctx.http, ctx.signal)).toEqual(['a', 'x']);
      b.routes.set('GET /models', () => ({ status: 200, json: { object: 'list' } }));
      expect(await adapter.servable(['a', 'b'], ctx.http, ctx.signal)).toEqual(['a', 'b']);
      b.routes.set('GET /models', () => ({ status: 200, text: '<html>proxy error</html>' }));
      expect(await adapter.servable(['a', 'b'], ctx.http, ctx.signal)).toEqual(['a', 'b']);
    });
  });

  it('turns an unreachable backend into a short failure naming the call', async () => {
    await b.close();
    await expect(new OllamaAdapter().unload(unload('m'), ctx)).rejects.toThrow(
      /^GET \/api\/ps: backend http:\/\/127\.0\.0\.1:\d+ unreachable: connect ECONNREFUSED/,
    );
  });
});

import { FakeBackend, ProbeAnswer } from './fake-backend';
import { body } from './fake-lifecycle-util';

// ---- vLLM ---------------------------------------------------------------------------------

const FASTAPI_404: ProbeAnswer = { status: 404, json: { detail: 'Not Found' } };

/**
 * vLLM's OpenAI server: /v1/models with model cards (LoRA adapters carry their base as `parent`),
 * the dev-mode routes /sleep, /wake_up, /is_sleeping and /reset_prefix_cache (404 without
 * VLLM_SERVER_DEV_MODE), and /v1/load_lora_adapter, /v1/unload_lora_adapter (404 without
 * VLLM_ALLOW_RUNTIME_LORA_UPDATING).
 */
export class FakeVllm {
  sleeping = false;
  /** VLLM_SERVER_DEV_MODE=1. */
  devMode = true;
  /** --enable-sleep-mode. */
  sleepMode = true;
  /** VLLM_ALLOW_RUNTIME_LORA_UPDATING=True. */
  runtimeLora = true;
  /** Loaded LoRA adapters: name → path. */
  readonly loras = new Map<string, string>();
  /** Directories (on the vLLM host) that hold a LoRA adapter. */
  readonly adapterDirs = new Set<string>();
  prefixResets = 0;
  /** The `level` of every POST /sleep. */
  readonly sleepLevels: Array<string | null> = [];

  constructor(
    b: FakeBackend,
    readonly base: string,
  ) {
    b.models = [base];
    b.routes.set('GET /v1/models', () => ({
      status: 200,
      json: {
        object: 'list',
        data: [
          { id: base, object: 'model', created: 1, owned_by: 'vllm', root: `/models/${base}`, parent: null, max_model_len: 8192 },
          ...[...this.loras].map(([id, path]) => ({ id, object: 'model', created: 1, owned_by: 'vllm', root: path, parent: base, max_model_len: 8192 })),
        ],
      },
    }));
    b.routes.set('GET /version', () => ({ status: 200, json: { version: '0.11.0' } }));
    b.routes.set('POST /sleep', (req) =>
      this.dev(() => {
        this.sleepLevels.push(req.query.get('level'));
        // The engine's assertion, turned into a 500 by the server's generic exception handler.
        if (!this.sleepMode)
          return { status: 500, json: { error: { message: 'Sleep mode is not enabled in the model config', type: 'InternalServerError', code: 500 } } };
        this.sleeping = true;
        return { status: 200, text: '' };
      }),
    );
    b.routes.set('POST /wake_up', () =>
      this.dev(() => {
        this.sleeping = false;
        return { status: 200, text: '' };
      }),
    );
    b.routes.set('GET /is_sleeping', () => this.dev(() => ({ status: 200, json: { is_sleeping: this.sleeping } })));
    b.routes.set('POST /reset_prefix_cache', () =>
      this.dev(() => {
        this.prefixResets++;
        return { status: 200, text: '' };
      }),
    );
    b.routes.set('POST /v1/load_lora_adapter', (req) => {
      if (!this.runtimeLora) return FASTAPI_404;
      const { lora_name: name, lora_path: path } = body(req.body) as { lora_name?: string; lora_path?: string };
      if (!name || !path)
        return { status: 400, json: { error: { message: "Both 'lora_name' and 'lora_path' must be provided.", type: 'BadRequestError', code: 400 } } };
      if (this.loras.has(name))
        return { status: 400, json: { error: { message: `The lora adapter '${name}' has already been loaded.`, type: 'BadRequestError', code: 400 } } };
      if (!this.adapterDirs.has(path)) return { status: 404, json: { error: { message: `No adapter found for ${path}`, type: 'NotFoundError', code: 404 } } };
      this.loras.set(name, path);
      b.models = [base, ...this.loras.keys()];
      return { status: 200, text: `Success: LoRA adapter '${name}' added successfully.` };
    });
    b.routes.set('POST /v1/unload_lora_adapter', (req) => {
      if (!this.runtimeLora) return FASTAPI_404;
      const name = String(body(req.body).lora_name);
      if (!this.loras.delete(name))
        return { status: 404, json: { error: { message: `The lora adapter '${name}' cannot be found.`, type: 'NotFoundError', code: 404 } } };
      b.models = [base, ...this.loras.keys()];
      return { status: 200, text: `Success: LoRA adapter '${name}' removed successfully.` };
    });
  }

  private dev(answer: () => ProbeAnswer): ProbeAnswer {
    return this.devMode ? answer() : FASTAPI_404;
  }
}

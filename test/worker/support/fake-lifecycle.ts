import { FakeBackend, ProbeAnswer } from './fake-backend';

/**
 * Stateful imitations of the lifecycle APIs of the backends the daemon drives, installed as routes
 * on a FakeBackend. Paths, bodies, status codes and error shapes follow each project's
 * documentation and source (see docs/worker.md, "Model lifecycle"); what a test needs to steer
 * (a pull's layers, a router's load script, vLLM's dev mode) is plain public state.
 */

type Json = Record<string, unknown>;

function body(text: string): Json {
  try {
    const v = JSON.parse(text) as unknown;
    return v && typeof v === 'object' && !Array.isArray(v) ? (v as Json) : {};
  } catch {
    return {};
  }
}

const tick = () => new Promise<void>((r) => setImmediate(r));

// ---- Ollama -------------------------------------------------------------------------------

export interface OllamaPullPlan {
  layers: Array<{ digest: string; total: number }>;
  /** Progress events per layer. Default 4. */
  steps?: number;
  /** A `{"error": …}` line after the download instead of success. */
  error?: string;
  /** The download starts once this resolves. */
  gate?: Promise<void>;
}

/** Ollama: /api/version, /api/tags, /api/ps, /api/show, /api/pull (NDJSON), /api/generate. */
export class FakeOllama {
  /** Local models (name with tag) → size in bytes. */
  readonly local = new Map<string, number>();
  /** Models in memory → size_vram in bytes. */
  readonly running = new Map<string, number>();
  /** What `POST /api/pull` of a model does; a model without a plan does not exist in the library. */
  readonly pulls = new Map<string, OllamaPullPlan>();
  /** Bodies of every POST /api/generate. */
  readonly generated: Json[] = [];

  constructor(
    private readonly b: FakeBackend,
    local: Record<string, number> = {},
  ) {
    for (const [name, size] of Object.entries(local)) this.local.set(tagged(name), size);
    this.sync();
    b.modelEntry = () => ({ owned_by: 'library' });
    b.routes.set('GET /api/version', () => ({ status: 200, json: { version: '0.12.6' } }));
    b.routes.set('GET /api/tags', () => ({
      status: 200,
      json: { models: [...this.local].map(([name, size]) => ({ name, model: name, modified_at: '2025-10-01T12:00:00Z', size, digest: 'a80c4f17', details: details() })) },
    }));
    b.routes.set('GET /api/ps', () => ({
      status: 200,
      json: {
        models: [...this.running].map(([name, vram]) => ({ name, model: name, size: vram, digest: 'a80c4f17', details: details(), expires_at: '2318-06-04T14:38:31Z', size_vram: vram })),
      },
    }));
    b.routes.set('POST /api/show', (req) => {
      const name = tagged(String(body(req.body).model));
      if (!this.local.has(name)) return { status: 404, json: { error: `model '${String(body(req.body).model)}' not found` } };
      return { status: 200, json: { capabilities: ['completion'], model_info: { 'general.architecture': 'llama', 'llama.context_length': 8192 } } };
    });
    b.routes.set('POST /api/generate', (req) => this.generate(body(req.body)));
    b.routes.set('POST /api/pull', (req) => ({ status: 200, ndjson: this.pull(String(body(req.body).model)) }));
  }

  private sync(): void {
    this.b.models = [...this.local.keys()];
  }

  private generate(req: Json): ProbeAnswer {
    this.generated.push(req);
    const model = String(req.model);
    const name = tagged(model);
    if (!this.local.has(name)) return { status: 404, json: { error: `model '${model}' not found` } };
    const base = { model, created_at: '2025-10-01T12:00:00Z', response: '', done: true };
    if (req.keep_alive === 0) {
      this.running.delete(name);
      return { status: 200, json: { ...base, done_reason: 'unload' } };
    }
    this.running.set(name, this.local.get(name) as number);
    return { status: 200, json: { ...base, done_reason: 'load' } };
  }

  private async *pull(model: string): AsyncGenerator<Json> {
    yield { status: 'pulling manifest' };
    const plan = this.pulls.get(tagged(model));
    if (!plan) {
      yield { error: 'pull model manifest: file does not exist' };
      return;
    }
    await plan.gate;
    const steps = plan.steps ?? 4;
    for (const { digest, total } of plan.layers) {
      yield { status: `pulling ${digest.slice(7, 19)}`, digest, total };
      for (let i = 1; i <= steps; i++) {
        await tick();
        yield { status: `pulling ${digest.slice(7, 19)}`, digest, total, completed: Math.round((total * i) / steps) };
      }
    }
    if (plan.error) {
      yield { error: plan.error };
      return;
    }
    yield { status: 'verifying sha256 digest' };
    yield { status: 'writing manifest' };
    this.local.set(tagged(model), plan.layers.reduce((n, l) => n + l.total, 0));
    this.sync();
    yield { status: 'success' };
  }
}

function tagged(name: string): string {
  return name.slice(name.lastIndexOf('/') + 1).includes(':') ? name : `${name}:latest`;
}

function details(): Json {
  return { parent_model: '', format: 'gguf', family: 'llama', families: ['llama'], parameter_size: '8.0B', quantization_level: 'Q4_K_M' };
}

// ---- llama-server router ------------------------------------------------------------------

export type RouterStep =
  | { state: 'downloading'; done: number; total: number }
  | { state: 'loading' }
  | { state: 'loaded' }
  | { state: 'unloaded' }
  /** The instance died: `unloaded` with `failed: true` and its exit code. */
  | { state: 'failed'; exitCode: number };

export interface RouterModel {
  state: 'unloaded' | 'downloading' | 'loading' | 'loaded' | 'sleeping';
  failed?: boolean;
  exitCode?: number;
  progress?: Json;
  /** What a load goes through, one step per `GET /models`. Default: loading, loaded. */
  loadScript: RouterStep[];
  pending: RouterStep[];
  /** Cached tokens per slot. */
  slots: number[];
}

const LLAMA_ERROR = (code: number, message: string, type: string): ProbeAnswer => ({ status: code, json: { error: { code, message, type } } });

/**
 * llama-server in router mode: GET /props (role router), GET /models and /v1/models with a
 * `status` per model, POST /models/load and /models/unload (answered at once; the state moves one
 * step per GET /models), GET /slots and POST /slots/:id?action=erase routed by model.
 * `single` turns it into a single-model server (no router routes, slots without a model).
 */
export class FakeLlamaRouter {
  readonly models = new Map<string, RouterModel>();
  /** Started with --slot-save-path: slot actions allowed. */
  slotSavePath = true;
  /** --models-autoload (the default). */
  autoload = true;

  constructor(
    b: FakeBackend,
    models: Record<string, Partial<Pick<RouterModel, 'state' | 'loadScript' | 'slots' | 'failed' | 'exitCode'>>>,
    readonly single = false,
  ) {
    for (const [id, m] of Object.entries(models)) {
      this.models.set(id, { state: m.state ?? 'unloaded', failed: m.failed, exitCode: m.exitCode, loadScript: m.loadScript ?? [{ state: 'loading' }, { state: 'loaded' }], pending: [], slots: m.slots ?? [0, 0] });
    }
    b.models = [...this.models.keys()];
    b.modelEntry = () => ({ owned_by: 'llamacpp' });
    b.routes.set('GET /props', (req) => this.props(req.query));
    b.routes.set('GET /slots', (req) => this.slots(req.query));
    b.routes.set('POST /slots/*', (req) => this.slotAction(req.path, req.query, body(req.body)));
    if (single) return;
    b.routes.set('GET /models', () => {
      this.advance();
      return this.list();
    });
    b.routes.set('GET /v1/models', () => this.list());
    b.routes.set('POST /models/load', (req) => this.load(String(body(req.body).model)));
    b.routes.set('POST /models/unload', (req) => this.unload(String(body(req.body).model)));
  }

  private list(): ProbeAnswer {
    const data = [...this.models].map(([id, m]) => ({
      id,
      object: 'model',
      owned_by: 'llamacpp',
      created: 1,
      status: {
        value: m.state,
        ...(m.state === 'unloaded' ? {} : { args: ['llama-server', '-ctx', '4096'] }),
        // Like the router's `is_failed()`: only an instance that is down shows its failure.
        ...(m.failed && m.state === 'unloaded' ? { failed: true, exit_code: m.exitCode } : {}),
        ...(m.state === 'downloading' ? { progress: m.progress } : {}),
      },
    }));
    return { status: 200, json: { data, object: 'list' } };
  }

  private advance(): void {
    for (const m of this.models.values()) {
      const step = m.pending.shift();
      if (!step) continue;
      m.progress = undefined;
      if (step.state === 'failed') {
        Object.assign(m, { state: 'unloaded', failed: true, exitCode: step.exitCode });
        m.pending = [];
      } else if (step.state === 'downloading') {
        Object.assign(m, { state: 'downloading', progress: { 'https://hf.example/model.gguf': { done: step.done, total: step.total } } });
      } else {
        m.state = step.state;
        // A ready instance, or one stopped cleanly, resets the exit code the failure was read from.
        if (step.state === 'loaded' || step.state === 'unloaded') m.failed = undefined;
      }
    }
  }

  private load(id: string): ProbeAnswer {
    const m = this.models.get(id);
    if (!m) return LLAMA_ERROR(404, 'model is not found', 'not_found_error');
    if (m.state !== 'unloaded') return LLAMA_ERROR(400, 'model is already running', 'invalid_request_error');
    m.state = 'loading';
    m.pending = [...m.loadScript];
    return { status: 200, json: { success: true } };
  }

  private unload(id: string): ProbeAnswer {
    const m = this.models.get(id);
    if (!m) return LLAMA_ERROR(400, 'model is not found', 'invalid_request_error');
    if (m.state === 'unloaded') return LLAMA_ERROR(400, 'model is not running', 'invalid_request_error');
    m.pending = [{ state: 'unloaded' }];
    return { status: 200, json: { success: true } };
  }

  private props(query: URLSearchParams): ProbeAnswer {
    const id = query.get('model');
    if (!id || this.single) {
      if (this.single) return { status: 200, json: { default_generation_settings: { n_ctx: 4096, params: {} }, total_slots: 2, build_info: 'b6500-1a2b3c4d' } };
      return {
        status: 200,
        json: { role: 'router', max_instances: 4, models_autoload: this.autoload, model_alias: 'llama-server', model_path: 'none', default_generation_settings: { params: {}, n_ctx: 0 }, build_info: 'b6500-1a2b3c4d' },
      };
    }
    const refused = this.refuse(id, query);
    if (refused) return refused;
    return { status: 200, json: { default_generation_settings: { n_ctx: 4096, params: {} }, total_slots: 2, model_alias: id, build_info: 'b6500-1a2b3c4d' } };
  }

  /** The router's check before it proxies to a model's instance. */
  private refuse(id: string | undefined, query: URLSearchParams): ProbeAnswer | undefined {
    const m = id ? this.models.get(id) : undefined;
    if (!m) return LLAMA_ERROR(400, 'model not found', 'invalid_request_error');
    const autoload = query.get('autoload') === null ? this.autoload : query.get('autoload') === 'true';
    if (m.state !== 'loaded' && !autoload) return LLAMA_ERROR(400, 'model is not loaded', 'invalid_request_error');
    // The daemon must never make a router load a model as a side effect of a flush or a probe.
    if (m.state !== 'loaded') return LLAMA_ERROR(500, `test fake: asked to autoload "${id}"`, 'server_error');
    return undefined;
  }

  private modelFor(id: string | undefined, query: URLSearchParams): { model: RouterModel } | { refused: ProbeAnswer } {
    if (this.single) return { model: [...this.models.values()][0] };
    const refused = this.refuse(id, query);
    return refused ? { refused } : { model: this.models.get(id as string) as RouterModel };
  }

  private slots(query: URLSearchParams): ProbeAnswer {
    const target = this.modelFor(query.get('model') ?? undefined, query);
    if ('refused' in target) return target.refused;
    return { status: 200, json: target.model.slots.map((n, id) => ({ id, id_task: -1, n_ctx: 4096, speculative: false, is_processing: false, params: {}, next_token: { n_decoded: n } })) };
  }

  private slotAction(path: string, query: URLSearchParams, req: Json): ProbeAnswer {
    if (!this.slotSavePath) return LLAMA_ERROR(501, 'This server does not support slots action. Start it with `--slot-save-path`', 'not_supported_error');
    const target = this.modelFor(typeof req.model === 'string' ? req.model : undefined, query);
    if ('refused' in target) return target.refused;
    const { model } = target;
    const id = Number(path.slice('/slots/'.length));
    if (!Number.isInteger(id) || id < 0 || id >= model.slots.length) return LLAMA_ERROR(400, 'Invalid slot ID', 'invalid_request_error');
    if (query.get('action') !== 'erase') return LLAMA_ERROR(400, 'Invalid action', 'invalid_request_error');
    const erased = model.slots[id];
    model.slots[id] = 0;
    return { status: 200, json: { id_slot: id, n_erased: erased } };
  }
}

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
    b.routes.set('POST /sleep', (req) => this.dev(() => {
      this.sleepLevels.push(req.query.get('level'));
      // The engine's assertion, turned into a 500 by the server's generic exception handler.
      if (!this.sleepMode) return { status: 500, json: { error: { message: 'Sleep mode is not enabled in the model config', type: 'InternalServerError', code: 500 } } };
      this.sleeping = true;
      return { status: 200, text: '' };
    }));
    b.routes.set('POST /wake_up', () => this.dev(() => {
      this.sleeping = false;
      return { status: 200, text: '' };
    }));
    b.routes.set('GET /is_sleeping', () => this.dev(() => ({ status: 200, json: { is_sleeping: this.sleeping } })));
    b.routes.set('POST /reset_prefix_cache', () => this.dev(() => {
      this.prefixResets++;
      return { status: 200, text: '' };
    }));
    b.routes.set('POST /v1/load_lora_adapter', (req) => {
      if (!this.runtimeLora) return FASTAPI_404;
      const { lora_name: name, lora_path: path } = body(req.body) as { lora_name?: string; lora_path?: string };
      if (!name || !path) return { status: 400, json: { error: { message: "Both 'lora_name' and 'lora_path' must be provided.", type: 'BadRequestError', code: 400 } } };
      if (this.loras.has(name)) return { status: 400, json: { error: { message: `The lora adapter '${name}' has already been loaded.`, type: 'BadRequestError', code: 400 } } };
      if (!this.adapterDirs.has(path)) return { status: 404, json: { error: { message: `No adapter found for ${path}`, type: 'NotFoundError', code: 404 } } };
      this.loras.set(name, path);
      b.models = [base, ...this.loras.keys()];
      return { status: 200, text: `Success: LoRA adapter '${name}' added successfully.` };
    });
    b.routes.set('POST /v1/unload_lora_adapter', (req) => {
      if (!this.runtimeLora) return FASTAPI_404;
      const name = String(body(req.body).lora_name);
      if (!this.loras.delete(name)) return { status: 404, json: { error: { message: `The lora adapter '${name}' cannot be found.`, type: 'NotFoundError', code: 404 } } };
      b.models = [base, ...this.loras.keys()];
      return { status: 200, text: `Success: LoRA adapter '${name}' removed successfully.` };
    });
  }

  private dev(answer: () => ProbeAnswer): ProbeAnswer {
    return this.devMode ? answer() : FASTAPI_404;
  }
}

// ---- runner API ---------------------------------------------------------------------------

export interface RunnerLoadScript {
  /** Progress reported by successive polls of the task before it ends. */
  progress: number[];
  outcome: { status: 'completed'; gpuMemoryUsedMB: number } | { status: 'failed'; error: string };
}

/**
 * A backend implementing model-runner-api §1–§4 itself: GET /v1/capabilities, POST
 * /v1/models/load (202 + task), GET /v1/models/load/{taskId}, POST /v1/models/unload, POST
 * /v1/cache/flush. Every lifecycle call must carry `token` as verifiedOpToken (else 401).
 */
export class FakeRunnerApi {
  readonly loaded = new Set<string>();
  /** Bodies of every lifecycle POST, in order. */
  readonly received: Array<{ path: string; body: Json }> = [];
  loadScript: RunnerLoadScript = { progress: [0.25, 0.75], outcome: { status: 'completed', gpuMemoryUsedMB: 38500 } };
  private readonly tasks = new Map<string, { modelId: string; polls: number; script: RunnerLoadScript }>();

  constructor(
    private readonly b: FakeBackend,
    loaded: string[],
    private readonly token: string,
  ) {
    for (const m of loaded) this.loaded.add(m);
    this.sync();
    b.routes.set('GET /v1/capabilities', () => ({
      status: 200,
      json: { runnerType: 'vllm-0.6.0', runnerId: 'runner-1', models: { loaded: [...this.loaded].map((id) => ({ id })), loading: [], available: [] }, health: 'healthy' },
    }));
    b.routes.set('POST /v1/models/load', (req) => this.guard('/v1/models/load', req.body, (r) => {
      const id = `load-${this.tasks.size + 1}`;
      this.tasks.set(id, { modelId: String(r.modelId), polls: 0, script: this.loadScript });
      return { status: 202, json: { taskId: id, status: 'loading', progress: 0.0, eta: 300 } };
    }));
    b.routes.set('GET /v1/models/load/*', (req) => {
      const id = decodeURIComponent(req.path.slice('/v1/models/load/'.length));
      const task = this.tasks.get(id);
      if (!task) return { status: 404, json: { error: `unknown task ${id}` } };
      const progress = task.script.progress[task.polls++];
      if (progress !== undefined) return { status: 200, json: { taskId: id, status: 'loading', progress, eta: Math.round(300 * (1 - progress)) } };
      if (task.script.outcome.status === 'failed') return { status: 200, json: { taskId: id, status: 'failed', modelId: task.modelId, error: task.script.outcome.error } };
      this.loaded.add(task.modelId);
      this.sync();
      return { status: 200, json: { taskId: id, status: 'completed', modelId: task.modelId, gpuMemoryUsedMB: task.script.outcome.gpuMemoryUsedMB, loadTimeMs: 287000 } };
    });
    b.routes.set('POST /v1/models/unload', (req) => this.guard('/v1/models/unload', req.body, (r) => {
      this.loaded.delete(String(r.modelId));
      this.sync();
      return { status: 200, json: { modelId: r.modelId, gpuMemoryFreedMB: 8200, kvCacheFlushed: true } };
    }));
    b.routes.set('POST /v1/cache/flush', (req) => this.guard('/v1/cache/flush', req.body, () => ({ status: 200, json: { flushed: true, entriesRemoved: 1234, memoryFreedMB: 3500 } })));
  }

  private guard(path: string, text: string, answer: (r: Json) => ProbeAnswer): ProbeAnswer {
    const r = body(text);
    this.received.push({ path, body: r });
    if (r.verifiedOpToken !== this.token) return { status: 401, json: { error: 'verifiedOpToken signature invalid' } };
    return answer(r);
  }

  private sync(): void {
    this.b.models = [...this.loaded];
  }
}

import { FakeBackend, ProbeAnswer } from './fake-backend';
import { Json, body } from './fake-lifecycle-util';

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
      this.models.set(id, {
        state: m.state ?? 'unloaded',
        failed: m.failed,
        exitCode: m.exitCode,
        loadScript: m.loadScript ?? [{ state: 'loading' }, { state: 'loaded' }],
        pending: [],
        slots: m.slots ?? [0, 0],
      });
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
        json: {
          role: 'router',
          max_instances: 4,
          models_autoload: this.autoload,
          model_alias: 'llama-server',
          model_path: 'none',
          default_generation_settings: { params: {}, n_ctx: 0 },
          build_info: 'b6500-1a2b3c4d',
        },
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
    return {
      status: 200,
      json: target.model.slots.map((n, id) => ({
        id,
        id_task: -1,
        n_ctx: 4096,
        speculative: false,
        is_processing: false,
        params: {},
        next_token: { n_decoded: n },
      })),
    };
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

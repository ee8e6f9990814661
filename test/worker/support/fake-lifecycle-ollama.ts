import { FakeBackend, ProbeAnswer } from './fake-backend';
import { Json, body, tick } from './fake-lifecycle-util';

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
      json: {
        models: [...this.local].map(([name, size]) => ({
          name,
          model: name,
          modified_at: '2025-10-01T12:00:00Z',
          size,
          digest: 'a80c4f17',
          details: details(),
        })),
      },
    }));
    b.routes.set('GET /api/ps', () => ({
      status: 200,
      json: {
        models: [...this.running].map(([name, vram]) => ({
          name,
          model: name,
          size: vram,
          digest: 'a80c4f17',
          details: details(),
          expires_at: '2318-06-04T14:38:31Z',
          size_vram: vram,
        })),
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
    this.local.set(
      tagged(model),
      plan.layers.reduce((n, l) => n + l.total, 0),
    );
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

import { ModelLoadMessage, ModelUnloadMessage } from '../../../protocol';
import { JsonObject, asObject } from '../probes/json';
import { backendMessage, expectOk, objectOf } from './backend-http';
import { estimateEta } from './progress';
import { Figures, LifecycleAdapter, OperationContext, OperationFailed, Unsupported, compact, evictFirst, mebibytes } from './types';

/** Share of a load's progress given to the download; the rest is the load into memory. */
const PULL_SHARE = 0.9;

/**
 * Ollama (docs/api.md of ollama/ollama):
 * - load: `POST /api/pull` when `GET /api/tags` does not list the model (its NDJSON progress —
 *   `completed`/`total` per layer `digest` — relayed), then `evict_model` unloaded, then `POST /api/generate` with no prompt
 *   and `keep_alive: -1`, which loads the model and keeps it loaded until it is unloaded;
 *   `max_context_length` becomes `options.num_ctx`;
 * - unload: `POST /api/generate` with no prompt and `keep_alive: 0`, then `GET /api/ps` until the
 *   model has left memory (its `size_vram` is reported as the memory freed);
 * - cache flush: Ollama has no API for its KV cache, so it is unsupported.
 * Ollama loads any local model on demand, so a model unloaded here is still listed and served:
 * its next request loads it again.
 */
export class OllamaAdapter implements LifecycleAdapter {
  readonly runner = 'ollama' as const;

  async load(command: ModelLoadMessage, ctx: OperationContext): Promise<Figures> {
    if (command.quantization !== undefined) {
      throw new Unsupported(
        `Ollama picks the quantization with the model tag (e.g. llama3.1:8b-instruct-q4_K_M), not as an option: load that tag instead of asking for "${command.quantization}"`,
      );
    }
    const model = command.model_id;
    if (!(await this.isLocal(model, ctx))) await this.pull(model, ctx);
    // Only now: a download needs no GPU memory, and one that fails must not cost the evicted model.
    await evictFirst(this, command, ctx);
    const options = command.max_context_length !== undefined ? { options: { num_ctx: command.max_context_length } } : {};
    expectOk(await ctx.http.post('/api/generate', { model, keep_alive: -1, stream: false, ...options }, ctx.signal), 'POST /api/generate');
    const running = await this.running(model, ctx);
    return compact({ gpu_memory_used_mb: mebibytes(running?.size_vram) });
  }

  async unload(command: ModelUnloadMessage, ctx: OperationContext): Promise<Figures> {
    const model = command.model_id;
    const before = await this.running(model, ctx);
    if (!before) return {};
    expectOk(await ctx.http.post('/api/generate', { model, keep_alive: 0, stream: false }, ctx.signal), 'POST /api/generate');
    while (await this.running(model, ctx)) await ctx.pause();
    return compact({ gpu_memory_freed_mb: mebibytes(before.size_vram) });
  }

  async flush(): Promise<Figures> {
    throw new Unsupported('Ollama has no API to clear its KV cache; unloading the model (model_unload) is the only way to drop it');
  }

  private async isLocal(model: string, ctx: OperationContext): Promise<boolean> {
    const doc = objectOf(expectOk(await ctx.http.get('/api/tags', ctx.signal), 'GET /api/tags'), 'GET /api/tags');
    return entries(doc).some((e) => names(e, model));
  }

  /** The model's `GET /api/ps` entry while it is in memory. */
  private async running(model: string, ctx: OperationContext): Promise<JsonObject | undefined> {
    const doc = objectOf(expectOk(await ctx.http.get('/api/ps', ctx.signal), 'GET /api/ps'), 'GET /api/ps');
    return entries(doc).find((e) => names(e, model));
  }

  private async pull(model: string, ctx: OperationContext): Promise<void> {
    const startedAt = Date.now();
    const { status, lines } = await ctx.http.postLines('/api/pull', { model, stream: true }, ctx.signal);
    if (status < 200 || status > 299) {
      let text = '';
      for await (const line of lines) text += line;
      throw new OperationFailed(`POST /api/pull answered ${status}: ${backendMessage({ status, text, json: parse(text) })}`);
    }
    const layers = new Map<string, { completed: number; total: number }>();
    let succeeded = false;
    for await (const line of lines) {
      const event = asObject(parse(line));
      if (!event) continue;
      if (typeof event.error === 'string') throw new OperationFailed(`Ollama could not pull "${model}": ${event.error.slice(0, 300)}`);
      if (event.status === 'success') succeeded = true;
      const { digest, total, completed } = event;
      if (typeof digest !== 'string' || typeof total !== 'number' || total <= 0) continue;
      layers.set(digest, { completed: typeof completed === 'number' ? Math.min(completed, total) : 0, total });
      let done = 0;
      let all = 0;
      for (const l of layers.values()) {
        done += l.completed;
        all += l.total;
      }
      const fraction = done / all;
      ctx.progress(PULL_SHARE * fraction, estimateEta(startedAt, Date.now(), fraction));
    }
    if (!succeeded) throw new OperationFailed(`Ollama's pull of "${model}" ended without "success"`);
    ctx.progress(PULL_SHARE);
  }
}

function entries(doc: JsonObject): JsonObject[] {
  return Array.isArray(doc.models) ? doc.models.map(asObject).filter((e): e is JsonObject => e !== undefined) : [];
}

/** Ollama names default their tag to `latest`: `llama3` and `llama3:latest` are one model. */
function withTag(name: string): string {
  const lastSegment = name.slice(name.lastIndexOf('/') + 1);
  return lastSegment.includes(':') ? name : `${name}:latest`;
}

function names(entry: JsonObject, model: string): boolean {
  const wanted = withTag(model);
  return [entry.name, entry.model].some((n) => typeof n === 'string' && withTag(n) === wanted);
}

function parse(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

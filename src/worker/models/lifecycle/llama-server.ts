import { CacheFlushMessage, ModelLoadMessage, ModelUnloadMessage } from '../../../protocol';
import { JsonObject, asObject } from '../probes/json';
import { Answer, LifecycleHttp, backendMessage, expectOk, isMissingRoute, isOk, objectOf } from './backend-http';
import { estimateEta } from './progress';
import { Figures, LifecycleAdapter, OperationContext, OperationFailed, Unsupported, evictFirst } from './types';

/** Share of a load's progress given to a router's download; the rest is starting the instance. */
const DOWNLOAD_SHARE = 0.9;
/** Router states in which a model answers requests (a sleeping instance wakes on its next request). */
const UP = new Set(['loaded', 'sleeping']);
/** Router states on the way to `loaded` or to a model ready to load (a finished download). */
const BUSY = new Set(['loading', 'downloading', 'downloaded']);

const SINGLE_MODEL =
  'this llama-server serves the one model it was started with; loading and unloading models needs router mode ' +
  '(start llama-server without -m, with --models-dir or --models-preset)';

interface Props {
  router: boolean;
  /** Router only: whether it loads a model a request names (`--models-autoload`, default on). */
  autoload: boolean;
}

/**
 * llama.cpp's llama-server (tools/server/README.md of ggml-org/llama.cpp):
 * - router mode (`GET /props` answers `role: "router"`): load = `POST /models/load {model}`,
 *   unload = `POST /models/unload {model}`, both followed on `GET /models` (`status.value`
 *   `unloaded` / `downloading` with per-file `done`/`total` / `loading` / `loaded` / `sleeping`,
 *   `failed: true` and `exit_code` when an instance died) until the model is there or gone;
 * - single-model mode: load and unload are unsupported;
 * - cache flush: `POST /slots/{id}?action=erase` for every slot of `GET /slots` (in router mode,
 *   of each loaded model, routed by `?model=` / `{"model": …}`). llama-server refuses every slot
 *   action with 501 unless it was started with `--slot-save-path`: then flush is unsupported.
 *   Its KV cache is per slot, so flushing by tenant or tag is unsupported.
 */
export class LlamaServerAdapter implements LifecycleAdapter {
  readonly runner = 'llama-server' as const;

  async load(command: ModelLoadMessage, ctx: OperationContext): Promise<Figures> {
    if (command.quantization !== undefined) {
      throw new Unsupported('llama-server picks the quantization with the model (a GGUF file, or a `:Q4_K_M`-style tag in its id), not as a load option');
    }
    if (command.max_context_length !== undefined) {
      throw new Unsupported('llama-server takes the context size from its command line or the model preset (`c = …`), not as a load option');
    }
    if (!(await this.props(ctx.http, ctx.signal)).router) throw new Unsupported(SINGLE_MODEL);
    const model = command.model_id;
    const before = await this.entry(model, ctx);
    if (!before) throw new OperationFailed(`llama-server does not know the model "${model}" (GET /models does not list it)`);
    await evictFirst(this, command, ctx);
    if (UP.has(stateOf(before))) return {};
    // Whether an attempt this operation watches is under way: ours, or one found running. The
    // router marks a model `loading` before it answers POST /models/load, so once an attempt is
    // under way, `unloaded` means it has ended (with `failed: true` when the instance died).
    let underWay = false;
    const request = async () => {
      const answer = await ctx.http.post('/models/load', { model }, ctx.signal);
      if (!(answer.status === 400 && /already/i.test(backendMessage(answer)))) expectOk(answer, 'POST /models/load');
      underWay = true;
    };
    if (!BUSY.has(stateOf(before))) await request();
    const startedAt = Date.now();
    for (;;) {
      await ctx.pause();
      const entry = await this.entry(model, ctx);
      if (!entry) throw new OperationFailed(`llama-server no longer lists "${model}"`);
      const state = stateOf(entry);
      if (UP.has(state)) return {};
      const status = asObject(entry.status) ?? {};
      if (state === 'unloaded') {
        if (status.failed === true) {
          const code = typeof status.exit_code === 'number' ? ` (its instance exited with code ${status.exit_code})` : '';
          throw new OperationFailed(`llama-server could not load "${model}"${code}`);
        }
        // A download (or someone else's load) we were waiting for has ended: now load it.
        if (!underWay) {
          await request();
          continue;
        }
        throw new OperationFailed(`llama-server stopped the instance of "${model}" before it had loaded (it was unloaded, or exited without an error code)`);
      }
      underWay ||= state === 'loading';
      if (state === 'downloading') {
        const fraction = downloaded(status.progress);
        if (fraction !== undefined) ctx.progress(DOWNLOAD_SHARE * fraction, estimateEta(startedAt, Date.now(), fraction));
      } else if (state === 'loading') {
        ctx.progress(DOWNLOAD_SHARE);
      }
    }
  }

  async unload(command: ModelUnloadMessage, ctx: OperationContext): Promise<Figures> {
    if (!(await this.props(ctx.http, ctx.signal)).router) throw new Unsupported(SINGLE_MODEL);
    const model = command.model_id;
    const before = await this.entry(model, ctx);
    if (!before || stateOf(before) === 'unloaded') return {};
    const answer = await ctx.http.post('/models/unload', { model }, ctx.signal);
    if (answer.status === 400 && /not (running|loaded)/i.test(backendMessage(answer))) return {};
    expectOk(answer, 'POST /models/unload');
    for (;;) {
      const entry = await this.entry(model, ctx);
      if (!entry || stateOf(entry) === 'unloaded') return {};
      await ctx.pause();
    }
  }

  async flush(command: CacheFlushMessage, ctx: OperationContext): Promise<Figures> {
    if (command.scope === 'tenant' || command.scope === 'tag') {
      throw new Unsupported(`llama-server keeps its KV cache per slot, not per ${command.scope}: it can only flush a model's slots (scope model or all)`);
    }
    if (!(await this.props(ctx.http, ctx.signal)).router) return { entries_removed: await this.eraseSlots(ctx) };
    const models =
      command.scope === 'model' ? [command.model_id as string] : (await this.models(ctx)).filter((e) => stateOf(e) === 'loaded').map((e) => e.id as string);
    let erased = 0;
    for (const model of models) {
      const entry = await this.entry(model, ctx);
      // An instance that is not running holds no cache; asking it would load it.
      if (!entry || stateOf(entry) !== 'loaded') continue;
      erased += await this.eraseSlots(ctx, entry.id as string);
    }
    return { entries_removed: erased };
  }

  async servable(models: string[], http: LifecycleHttp, signal: AbortSignal): Promise<string[]> {
    const props = await this.props(http, signal);
    if (!props.router || props.autoload) return models;
    const answer = await http.get('/models', signal);
    if (!isOk(answer)) return models;
    // Only a model the router lists in a state that refuses requests is left out: a list it did
    // not send, or a model missing from it, is no reason to stop advertising.
    const down = new Set<string>();
    for (const e of listOf(asObject(answer.json))) {
      if (UP.has(stateOf(e))) continue;
      for (const name of namesOf(e)) down.add(name);
    }
    return models.filter((m) => !down.has(m));
  }

  private async props(http: LifecycleHttp, signal: AbortSignal): Promise<Props> {
    const doc = objectOf(expectOk(await http.get('/props', signal), 'GET /props'), 'GET /props');
    return { router: doc.role === 'router', autoload: doc.models_autoload !== false };
  }

  private async models(ctx: OperationContext): Promise<JsonObject[]> {
    return listOf(objectOf(expectOk(await ctx.http.get('/models', ctx.signal), 'GET /models'), 'GET /models'));
  }

  private async entry(model: string, ctx: OperationContext): Promise<JsonObject | undefined> {
    return (await this.models(ctx)).find((e) => namesOf(e).includes(model));
  }

  /** Erases every slot's cache (of one router model, or of a single-model server); returns the tokens erased. */
  private async eraseSlots(ctx: OperationContext, model?: string): Promise<number> {
    const query = model === undefined ? '' : `?model=${encodeURIComponent(model)}&autoload=false`;
    const slots = await ctx.http.get(`/slots${query}`, ctx.signal);
    if (isMissingRoute(slots))
      throw new Unsupported(
        `llama-server does not expose its slots (GET /slots answered ${slots.status}: ${backendMessage(slots)}); start it without --no-slots`,
      );
    const list = expectOk(slots, 'GET /slots').json;
    if (!Array.isArray(list)) throw new OperationFailed('GET /slots did not answer a list of slots');
    let erased = 0;
    for (const slot of list) {
      const id = asObject(slot)?.id;
      if (typeof id !== 'number' || !Number.isInteger(id) || id < 0) continue;
      const path = `/slots/${id}?action=erase${model === undefined ? '' : '&autoload=false'}`;
      const answer: Answer = await ctx.http.post(path, model === undefined ? {} : { model }, ctx.signal);
      if (answer.status === 501) {
        throw new Unsupported(
          `llama-server refuses slot actions: ${backendMessage(answer)} (erasing a slot's cache needs llama-server started with --slot-save-path)`,
        );
      }
      const n = asObject(expectOk(answer, `POST /slots/${id}?action=erase`).json)?.n_erased;
      if (typeof n === 'number' && n >= 0) erased += n;
    }
    return erased;
  }
}

function listOf(doc: JsonObject | undefined): JsonObject[] {
  const data = doc?.data;
  return Array.isArray(data) ? data.map(asObject).filter((e): e is JsonObject => e !== undefined && typeof e.id === 'string') : [];
}

/** A router entry's id and aliases: a request may name the model either way. */
function namesOf(entry: JsonObject): string[] {
  const aliases = Array.isArray(entry.aliases) ? entry.aliases.filter((a): a is string => typeof a === 'string') : [];
  return [entry.id as string, ...aliases];
}

function stateOf(entry: JsonObject): string {
  const value = asObject(entry.status)?.value;
  return typeof value === 'string' ? value : 'unknown';
}

/** `{url: {done, total}}` of the files a router is downloading → the fraction done. */
function downloaded(progress: unknown): number | undefined {
  const files = asObject(progress);
  if (!files) return undefined;
  let done = 0;
  let total = 0;
  for (const f of Object.values(files)) {
    const file = asObject(f);
    if (typeof file?.done !== 'number' || typeof file.total !== 'number' || file.total <= 0) continue;
    done += Math.min(file.done, file.total);
    total += file.total;
  }
  return total > 0 ? done / total : undefined;
}

import { CacheFlushMessage, ModelLoadMessage, ModelUnloadMessage } from '../../../protocol';
import { LoraPathRefused, containedLoraPath } from '../../guard/lifecycle-args';
import { JsonObject, asObject } from '../probes/json';
import { LifecycleHttp, backendMessage, expectOk, isMissingRoute, isOk, objectOf } from './backend-http';
import { Figures, LifecycleAdapter, OperationContext, OperationFailed, Unsupported, evictFirst } from './types';

const DEV_MODE = 'vLLM serves it only when started with VLLM_SERVER_DEV_MODE=1';
const SLEEP_MODE = `sleep and wake-up need vLLM started with --enable-sleep-mode, and ${DEV_MODE}`;
const RUNTIME_LORA = 'loading LoRA adapters at runtime needs vLLM started with VLLM_ALLOW_RUNTIME_LORA_UPDATING=True (and --enable-lora)';

/** A LoRA adapter name that stays inside --lora-dir: path segments of safe characters, none `.`/`..`. */
const ADAPTER_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]*(\/[A-Za-z0-9][A-Za-z0-9._-]*)*$/;

/**
 * vLLM's OpenAI-compatible server (vllm-project/vllm: docs/features/sleep_mode.md,
 * docs/features/lora.md, vllm/entrypoints/serve/{sleep,cache}/api_router.py):
 * - the served base model: unload = `POST /sleep?level=1` (weights offloaded to CPU memory, KV
 *   cache dropped), load = `POST /wake_up`, both confirmed on `GET /is_sleeping`;
 * - LoRA adapters: a model id the server lists with a `parent` is an adapter, unloaded with
 *   `POST /v1/unload_lora_adapter {lora_name}`; a model id it does not list is loaded as the
 *   adapter `<--lora-dir>/<model id>` with `POST /v1/load_lora_adapter {lora_name, lora_path}`
 *   (without --lora-dir such a load is unsupported: the gateway never names a path), only once
 *   that directory exists on this host and resolves, symlinks followed, inside --lora-dir;
 * - cache flush: `POST /reset_prefix_cache`, which empties the whole prefix cache (so scope
 *   `model` flushes more than that model); by tenant or tag is unsupported.
 * While it sleeps vLLM answers inference with 503, so its models are not advertised then.
 */
export class VllmAdapter implements LifecycleAdapter {
  readonly runner = 'vllm' as const;

  constructor(private readonly loraDir?: string) {}

  async load(command: ModelLoadMessage, ctx: OperationContext): Promise<Figures> {
    if (command.quantization !== undefined) throw new Unsupported('vLLM fixes the quantization when it starts (--quantization), not per load');
    if (command.max_context_length !== undefined) throw new Unsupported('vLLM fixes the context length when it starts (--max-model-len), not per load');
    const model = command.model_id;
    const cards = await this.cards(ctx);
    const card = cards.find((c) => c.id === model);
    const adapterPath = card ? undefined : await this.adapterPath(model, cards);
    await evictFirst(this, command, ctx);
    if (adapterPath !== undefined) {
      const answer = await ctx.http.post('/v1/load_lora_adapter', { lora_name: model, lora_path: adapterPath }, ctx.signal);
      if (isMissingRoute(answer)) throw new Unsupported(`${RUNTIME_LORA} (POST /v1/load_lora_adapter answered ${answer.status})`);
      expectOk(answer, 'POST /v1/load_lora_adapter');
      return {};
    }
    // Without the sleep endpoints the server cannot be asleep: a listed model is loaded.
    if (isLora(card as JsonObject) || (await this.sleepState(ctx)) !== true) return {};
    await this.devCall('/wake_up', ctx);
    while (await this.sleeping(ctx)) await ctx.pause();
    return {};
  }

  async unload(command: ModelUnloadMessage, ctx: OperationContext): Promise<Figures> {
    const card = (await this.cards(ctx)).find((c) => c.id === command.model_id);
    if (!card) return {};
    if (isLora(card)) {
      const answer = await ctx.http.post('/v1/unload_lora_adapter', { lora_name: command.model_id }, ctx.signal);
      if (isMissingRoute(answer)) throw new Unsupported(`${RUNTIME_LORA} (POST /v1/unload_lora_adapter answered ${answer.status})`);
      expectOk(answer, 'POST /v1/unload_lora_adapter');
      return {};
    }
    if (await this.sleeping(ctx)) return {};
    await this.devCall('/sleep?level=1', ctx);
    while (!(await this.sleeping(ctx))) await ctx.pause();
    return {};
  }

  async flush(command: CacheFlushMessage, ctx: OperationContext): Promise<Figures> {
    if (command.scope === 'tenant' || command.scope === 'tag') {
      throw new Unsupported(`vLLM's prefix cache is shared by all requests and can only be reset whole (scope all or model), not per ${command.scope}`);
    }
    const answer = await ctx.http.post('/reset_prefix_cache', undefined, ctx.signal);
    if (isMissingRoute(answer)) throw new Unsupported(`POST /reset_prefix_cache answered ${answer.status}: ${DEV_MODE}`);
    expectOk(answer, 'POST /reset_prefix_cache');
    return {};
  }

  async servable(models: string[], http: LifecycleHttp, signal: AbortSignal): Promise<string[]> {
    const answer = await http.get('/is_sleeping', signal);
    return isOk(answer) && asObject(answer.json)?.is_sleeping === true ? [] : models;
  }

  private async cards(ctx: OperationContext): Promise<JsonObject[]> {
    const doc = objectOf(expectOk(await ctx.http.get('/v1/models', ctx.signal), 'GET /v1/models'), 'GET /v1/models');
    return Array.isArray(doc.data) ? doc.data.map(asObject).filter((c): c is JsonObject => typeof c?.id === 'string') : [];
  }

  private async sleeping(ctx: OperationContext): Promise<boolean> {
    const state = await this.sleepState(ctx);
    if (state === undefined) throw new Unsupported(`GET /is_sleeping is not served: ${SLEEP_MODE}`);
    return state;
  }

  /** Whether the engine sleeps; undefined when the server has no sleep endpoints. */
  private async sleepState(ctx: OperationContext): Promise<boolean | undefined> {
    const answer = await ctx.http.get('/is_sleeping', ctx.signal);
    if (isMissingRoute(answer)) return undefined;
    const value = objectOf(expectOk(answer, 'GET /is_sleeping'), 'GET /is_sleeping').is_sleeping;
    if (typeof value !== 'boolean') throw new OperationFailed('GET /is_sleeping answered no is_sleeping boolean');
    return value;
  }

  private async devCall(path: string, ctx: OperationContext): Promise<void> {
    const answer = await ctx.http.post(path, undefined, ctx.signal);
    if (isMissingRoute(answer)) throw new Unsupported(`POST ${path.split('?')[0]} answered ${answer.status}: ${SLEEP_MODE}`);
    if (!isOk(answer)) {
      const what = `POST ${path.split('?')[0]} answered ${answer.status}: ${backendMessage(answer)}`;
      // The engine asserts `enable_sleep_mode`; its server answers the assertion with a 500.
      if (/sleep mode is not enabled/i.test(backendMessage(answer))) throw new Unsupported(`${what}: ${SLEEP_MODE}`);
      throw new OperationFailed(what);
    }
  }

  /** Where the LoRA adapter a model id names lives, or why this vLLM cannot load it. */
  private async adapterPath(model: string, cards: JsonObject[]): Promise<string> {
    if (!this.loraDir) {
      const bases = cards.filter((c) => !isLora(c)).map((c) => c.id as string);
      throw new Unsupported(
        `this vLLM serves ${bases.length ? bases.join(', ') : 'no model yet'}; "${model}" is neither that nor a LoRA adapter it has loaded, ` +
          'and LoRA adapters are loaded by name only from --lora-dir, which is not set',
      );
    }
    if (!ADAPTER_NAME.test(model)) {
      throw new OperationFailed(
        `"${model}" is not a LoRA adapter name that can be looked up under --lora-dir (letters, digits, . _ - and / only; no "." or ".." segments)`,
      );
    }
    try {
      // Resolved on disk: a symlink inside --lora-dir must not lead vLLM out of it.
      return await containedLoraPath(this.loraDir, model);
    } catch (err) {
      if (err instanceof LoraPathRefused) throw new OperationFailed(err.message);
      throw err;
    }
  }
}

/** vLLM lists a LoRA adapter with its base model as `parent`; the base model's parent is null. */
function isLora(card: JsonObject): boolean {
  return typeof card.parent === 'string' && card.parent.length > 0;
}

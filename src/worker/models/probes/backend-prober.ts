import { ModelCapabilities, RunnerInfo } from '../../../protocol';
import { BackendAnswer, BackendClient } from '../../requests/backend-client';
import { Logger } from '../../logger';
import { ENDPOINT_PROBE_BODY, PROBED_ENDPOINTS, endpointPresent } from './endpoints';
import { JsonObject, parseJsonObject } from './json';
import { isLlamaServerProps, llamaServerCapabilities, llamaServerVersion } from './llama-server';
import { ollamaCapabilities } from './ollama';
import { looksLikeVllm, versionOf, vllmContextLengths } from './vllm';

/** What one probing round learnt. Anything it could not learn is absent: unknown, not "no". */
export interface ProbeResult {
  /** The models the round was for. */
  models: string[];
  runner?: RunnerInfo;
  /** The backend's own `GET /v1/capabilities` (a runner API), relayed to the gateway as it is. */
  runnerCapabilities?: JsonObject;
  capabilities: Record<string, ModelCapabilities>;
  /** Absent when any endpoint probe failed to get an HTTP answer, or none was found. */
  endpoints?: string[];
  /** Nothing answered at all: worth probing again on the next connect. */
  unreachable: boolean;
}

type Outcome = { ok: true; answer: BackendAnswer } | { ok: false; error: string };

/** A runner API's capabilities document larger than this is not relayed (frames stay small). */
const MAX_RUNNER_CAPABILITIES_CHARS = 64 * 1024;

/** Per-model look-ups run this many at a time (Ollama hosts can list dozens of models). */
const PER_MODEL_PARALLEL = 4;

/**
 * Finds out which server the backend is and what it can do, without running inference: a few
 * GETs, POST /api/show on Ollama, and a POST {} per inference endpoint. Every request has a short
 * timeout and the whole round a deadline, so a hanging backend delays registration by at most
 * twice the timeout. A failed probe is logged once (the same failure later only at debug) and
 * leaves its capability unknown.
 */
export class BackendProber {
  private readonly reported = new Set<string>();
  /** The current round's stop signal: failures seen while the daemon stops are not worth a line. */
  private stop?: AbortSignal;

  constructor(
    private readonly backend: BackendClient,
    private readonly log: Logger,
    private readonly timeoutMs: number,
  ) {}

  async probe(models: string[], stop: AbortSignal): Promise<ProbeResult> {
    this.stop = stop;
    const round = AbortSignal.any([stop, AbortSignal.timeout(this.timeoutMs * 2)]);
    const [props, ollamaVersion, version, modelList, endpoints, runnerApi] = await Promise.all([
      this.ask('GET', '/props', round),
      this.ask('GET', '/api/version', round),
      this.ask('GET', '/version', round),
      this.ask('GET', '/v1/models', round),
      this.probeEndpoints(round),
      this.ask('GET', '/v1/capabilities', round),
    ]);
    const result: ProbeResult = { models: [...models], capabilities: {}, unreachable: false };
    if (endpoints) result.endpoints = endpoints;
    const runnerDoc = okJson(runnerApi);
    if (runnerDoc && runnerApi.ok && runnerApi.answer.text.length <= MAX_RUNNER_CAPABILITIES_CHARS) result.runnerCapabilities = runnerDoc;

    if (![props, ollamaVersion, version, modelList].some((o) => o.ok) && !endpoints) {
      result.unreachable = true;
      const error = [props, ollamaVersion, version, modelList].map((o) => (o.ok ? '' : o.error)).find(Boolean);
      this.failed('backend', 'the backend answered no probe; capabilities, endpoints and runner stay unknown', { error });
      return result;
    }

    const propsDoc = okJson(props);
    if (props.ok && props.answer.status === 200 && !propsDoc) {
      this.failed('llama-server /props', 'GET /props answered 200 but not a JSON object; capabilities stay unknown');
    }
    const ollamaDoc = okJson(ollamaVersion);
    const modelsDoc = okJson(modelList);

    if (propsDoc && isLlamaServerProps(propsDoc)) {
      result.runner = { type: 'llama-server', version: llamaServerVersion(propsDoc) };
      result.capabilities = await this.llamaServer(models, propsDoc, round);
    } else if (ollamaDoc && typeof ollamaDoc.version === 'string') {
      result.runner = { type: 'ollama', version: versionOf(ollamaDoc) };
      result.capabilities = await this.ollama(models, round);
    } else if (looksLikeVllm(modelsDoc)) {
      result.runner = { type: 'vllm', version: versionOf(okJson(version)) };
      const contexts = vllmContextLengths(modelsDoc);
      for (const m of models) {
        const ctx = contexts.get(m);
        if (ctx !== undefined) result.capabilities[m] = { context_length: ctx };
      }
    } else {
      result.runner = { type: 'openai-compatible' };
    }
    if (result.runner.version === undefined) delete result.runner.version;
    return result;
  }

  /** Most llama-servers serve one model: its /props is all there is. A router serves several, each with its own props. */
  private async llamaServer(models: string[], props: JsonObject, round: AbortSignal): Promise<Record<string, ModelCapabilities>> {
    if (models.length <= 1) return Object.fromEntries(models.map((m) => [m, llamaServerCapabilities(props)]));
    // autoload=false: asking about a model must not make a router load it.
    return this.perModel(models, 'llama-server /props?model=', async (m) => {
      const doc = okJson(await this.ask('GET', `/props?model=${encodeURIComponent(m)}&autoload=false`, round));
      return doc && isLlamaServerProps(doc) ? llamaServerCapabilities(doc) : undefined;
    });
  }

  private ollama(models: string[], round: AbortSignal): Promise<Record<string, ModelCapabilities>> {
    return this.perModel(models, 'ollama /api/show', async (m) => {
      const outcome = await this.ask('POST', '/api/show', round, JSON.stringify({ model: m }));
      const doc = okJson(outcome);
      if (doc) return ollamaCapabilities(doc);
      throw new Error(outcome.ok ? `answered ${outcome.answer.status}` : outcome.error);
    });
  }

  private async perModel(
    models: string[],
    probe: string,
    one: (model: string) => Promise<ModelCapabilities | undefined>,
  ): Promise<Record<string, ModelCapabilities>> {
    const out: Record<string, ModelCapabilities> = {};
    const failures: string[] = [];
    let error: string | undefined;
    const queue = [...models];
    const worker = async () => {
      for (let m = queue.shift(); m !== undefined; m = queue.shift()) {
        try {
          const caps = await one(m);
          if (caps) out[m] = caps;
          else failures.push(m);
        } catch (e) {
          failures.push(m);
          error ??= (e as Error).message;
        }
      }
    };
    await Promise.all(Array.from({ length: Math.min(PER_MODEL_PARALLEL, models.length) }, worker));
    if (failures.length > 0) {
      this.failed(probe, `${probe} gave nothing usable for some models; their capabilities stay unknown`, {
        models: failures.sort(),
        error,
      });
    }
    return out;
  }

  /** The endpoints present, or undefined when one got no HTTP answer or none is present (then nothing is claimed). */
  private async probeEndpoints(round: AbortSignal): Promise<string[] | undefined> {
    const outcomes = await Promise.all(PROBED_ENDPOINTS.map((p) => this.ask('POST', p, round, ENDPOINT_PROBE_BODY)));
    const failed = outcomes.find((o): o is Extract<Outcome, { ok: false }> => !o.ok);
    if (failed) {
      // When nothing answered at all, the round's "backend answered no probe" line says it.
      if (outcomes.some((o) => o.ok)) {
        this.failed('endpoints', 'could not tell which endpoints the backend serves; advertising none (all allowed)', { error: failed.error });
      }
      return undefined;
    }
    const present = PROBED_ENDPOINTS.filter((_, i) => {
      const { answer } = outcomes[i] as Extract<Outcome, { ok: true }>;
      return endpointPresent(answer.status, answer.text);
    });
    if (present.length === 0) {
      // An empty list would take this worker out of all routing on one unusual answer; a backend
      // that really serves nothing fails its requests with the same 404 anyway.
      this.failed('endpoints', 'the backend answered 404/405 on every inference endpoint: is BACKEND_URL its root? Advertising no endpoint list', {
        probed: [...PROBED_ENDPOINTS],
      });
      return undefined;
    }
    return present;
  }

  private async ask(method: 'GET' | 'POST', path: string, round: AbortSignal, body?: string): Promise<Outcome> {
    const signal = AbortSignal.any([round, AbortSignal.timeout(this.timeoutMs)]);
    try {
      return { ok: true, answer: await this.backend.call(method, path, signal, body, 1 << 20) };
    } catch (e) {
      return { ok: false, error: signal.aborted ? `${method} ${path}: no answer within ${this.timeoutMs} ms` : (e as Error).message };
    }
  }

  /** Warn the first time a given probe fails a given way; repeats (every refresh) only at debug. */
  private failed(probe: string, msg: string, fields: Record<string, unknown> = {}): void {
    if (this.stop?.aborted) return;
    const key = `${probe}\n${msg}\n${String(fields.error ?? '')}`;
    if (this.reported.has(key)) {
      this.log.debug(msg, { probe, ...fields });
      return;
    }
    this.reported.add(key);
    this.log.warn(msg, { probe, ...fields });
  }
}

function okJson(outcome: Outcome): JsonObject | undefined {
  return outcome.ok && outcome.answer.status >= 200 && outcome.answer.status < 300 ? parseJsonObject(outcome.answer.text) : undefined;
}

import { ModelCapabilities } from '../../protocol';
import { Logger } from '../logger';
import { BackendClient } from '../requests/backend-client';
import { LifecycleHttp } from './lifecycle/backend-http';
import { AdapterChoice, chooseAdapter, createAdapter } from './lifecycle/select';
import { LifecycleAdapter, RunnerChoice } from './lifecycle/types';
import { BackendProber, ProbeResult } from './probes/backend-prober';

export interface CatalogOptions {
  /** `--models '*'`: the list comes from the backend's GET /v1/models. */
  discoverModels: boolean;
  models: string[];
  capabilities: Record<string, ModelCapabilities>;
  runner: RunnerChoice;
  loraDir?: string;
  modelsPollIntervalMs: number;
  /** Time limit for the backend's GET /v1/models. */
  modelsTimeoutMs: number;
  /** Aborted on stop: interrupts a models lookup that is holding up a connect. */
  signal: AbortSignal;
}

/**
 * What this worker serves: the model list (configured or read from the backend), what the probe
 * found out about the backend, and the lifecycle adapter that matches it.
 */
export class ModelCatalog {
  private current: string[];
  private probed?: ProbeResult;
  /** The lifecycle adapter for the backend as last identified (rebuilt when that changes). */
  private adapterCache?: { key: string; adapter: LifecycleAdapter };

  constructor(
    private readonly options: CatalogOptions,
    private readonly backend: BackendClient,
    private readonly http: LifecycleHttp,
    private readonly prober: BackendProber | undefined,
    private readonly log: Logger,
  ) {
    this.current = options.discoverModels ? [] : [...options.models];
  }

  get models(): string[] {
    return this.current;
  }

  /** The last probe's result, if any. */
  get probe(): ProbeResult | undefined {
    return this.probed;
  }

  /** Probed capabilities with the configured ones on top, field by field (--capability always wins). */
  capabilitiesFor(models: string[]): Record<string, ModelCapabilities> | undefined {
    let out: Record<string, ModelCapabilities> | undefined;
    for (const m of models) {
      const caps: ModelCapabilities = { ...this.probed?.capabilities[m], ...this.options.capabilities[m] };
      if (Object.keys(caps).length > 0) (out ??= {})[m] = caps;
    }
    return out;
  }

  async forRegister(): Promise<string[]> {
    if (this.options.discoverModels) {
      const found = await this.fetchBackendModels();
      if (found) this.current = found;
      if (this.current.length === 0) {
        const poll = this.options.modelsPollIntervalMs;
        this.log.warn('registering without models: the backend lists none yet', {
          retry: poll > 0 ? `every ${poll / 1000}s` : 'on models_refresh',
        });
      }
    }
    await this.probeBackend(false);
    // The first list was read before the probe said which server this is.
    if (this.options.discoverModels) this.current = await this.servableOf(this.current);
    return this.current;
  }

  /**
   * Asks the backend for its list and takes it (logged with `what` when it differs), then probes.
   * If the backend cannot answer, the current list stays; fetchBackendModels has logged why.
   */
  async reload(what: string, forceProbe: boolean): Promise<void> {
    const found = await this.fetchBackendModels();
    if (found && !sameList(found, this.current)) this.log.info(what, { before: this.current, after: found });
    if (found) this.current = found;
    await this.probeBackend(forceProbe);
  }

  /** Polling: true when the backend's list changed (then taken and probed). */
  async pollChanged(stillWanted: () => boolean): Promise<boolean> {
    const found = await this.fetchBackendModels();
    if (!found || !stillWanted() || sameList(found, this.current)) return false;
    this.log.info('backend model list changed', { before: this.current, after: found });
    this.current = found;
    await this.probeBackend(true);
    return true;
  }

  /** `--runner`, or what the probe detected; the adapter is rebuilt only when that changes. */
  adapter(): LifecycleAdapter {
    const choice: AdapterChoice = chooseAdapter(
      this.options.runner,
      this.probed && !this.probed.unreachable ? { runner: this.probed.runner, runnerApi: this.probed.runnerCapabilities !== undefined } : undefined,
    );
    const key = `${choice.type}/${choice.how}`;
    if (this.adapterCache?.key !== key) this.adapterCache = { key, adapter: createAdapter(choice, { loraDir: this.options.loraDir }) };
    return this.adapterCache.adapter;
  }

  /** Probes when the models differ from the last round, or when the backend answered nothing then. */
  private async probeBackend(force: boolean): Promise<void> {
    if (!this.prober) return;
    if (!force && this.probed && !this.probed.unreachable && sameList(this.probed.models, this.current)) return;
    const result = await this.prober.probe(this.current, this.options.signal);
    if (this.options.signal.aborted) return;
    const before = this.probed;
    this.probed = result;
    if (!before || before.runner?.type !== result.runner?.type || before.runner?.version !== result.runner?.version) {
      if (result.runner) {
        this.log.info('backend detected', {
          runner: result.runner.type,
          version: result.runner.version,
          capabilities: result.capabilities,
          endpoints: result.endpoints,
        });
      }
    } else {
      this.log.debug('backend probed', { capabilities: result.capabilities, endpoints: result.endpoints });
    }
  }

  /** Backend model ids, or undefined (logged) if the backend cannot say. */
  private async fetchBackendModels(): Promise<string[] | undefined> {
    const signal = AbortSignal.any([this.options.signal, AbortSignal.timeout(this.options.modelsTimeoutMs)]);
    try {
      const listed = await this.backend.listModels(signal);
      return await this.servableOf(listed);
    } catch (err) {
      if (this.options.signal.aborted) return undefined;
      this.log.warn('backend model list unavailable; keeping the last known list', {
        error: (err as Error).message,
        models: this.current,
      });
      return undefined;
    }
  }

  /** Drops the listed models the backend cannot answer now (e.g. a sleeping vLLM); on any doubt keeps them. */
  private async servableOf(models: string[]): Promise<string[]> {
    const adapter = this.adapter();
    if (!adapter.servable || models.length === 0) return models;
    const signal = AbortSignal.any([this.options.signal, AbortSignal.timeout(this.options.modelsTimeoutMs)]);
    try {
      const servable = await adapter.servable(models, this.http, signal);
      if (servable.length !== models.length) {
        this.log.debug('leaving out models the backend cannot serve right now', { listed: models, servable, runner: adapter.runner });
      }
      return servable;
    } catch (err) {
      this.log.debug('could not tell which listed models the backend can serve now; keeping them all', { error: (err as Error).message });
      return models;
    }
  }
}

export function sameList(a: string[], b: string[]): boolean {
  return a.length === b.length && a.every((x, i) => x === b[i]);
}

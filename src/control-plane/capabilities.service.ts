import { CAPABILITY_FLAGS, Features } from '../protocol';
import { Inject, Injectable, Optional } from '@nestjs/common';
import { CLOCK, Clock } from '../common/clock';
import { Provider, ProvidersService } from '../providers/providers.service';
import { AdmissionQueue } from '../queue/admission-queue';
import { Fleet } from '../fleet/fleet.service';
import { WorkerSnapshot } from '../fleet/worker-snapshot';
import { effectiveCapabilities } from '../routing/capabilities';
import { RoutingConfigHolder } from '../routing/routing-config-holder';
import { TenantsService } from '../tenancy/tenants.service';
import { appVersion } from '../observability/app-version';
import { LoadingModels } from '../lifecycle/loading-models';
import { Router } from '../routing/router.service';
import { poolCapacity, PoolSlots } from './pool-capacity';
import { PoolRunnerFacts, runnerFacts } from './runner-facts';

/** How long one discovery answer is reused: discovery is polled by dashboards and CLIs. */
const CACHE_MS = 5000;

const INFERENCE_ENDPOINTS = ['/v1/chat/completions', '/v1/completions', '/v1/responses', '/v1/embeddings', '/v1/messages'];

/** The discovery document's version; the OpenAPI document's `info.version` is the same value. */
export function apiVersion(): string {
  return appVersion();
}

export interface LoadedModel {
  id: string;
  context_length?: number;
  capabilities: string[];
  workers: number;
}

export interface PoolCapabilities extends PoolRunnerFacts {
  id: string;
  engines: Array<{ type: string; version?: string }>;
  ctx_max?: number;
  slots: PoolSlots;
  workers: number;
  supported_workloads: string[];
  models: { loaded: LoadedModel[]; loading: Array<{ id: string; progress: number; eta?: number }>; available: string[] };
  queue: { depth: number; max_depth: number; avg_wait_ms: number; p95_wait_ms: number };
  rate_limits: { default_rpm?: number; default_tpm?: number; per_tenant: boolean };
  features: string[];
  health: { enabled: boolean; ready: boolean };
  /** Runner-API capability documents the pool's workers relayed from their backends, as they are. */
  runners?: Array<{ worker: string; capabilities: Record<string, unknown> }>;
}

export interface CapabilitiesDocument {
  api_version: string;
  generated_at: string;
  pools: PoolCapabilities[];
}

/**
 * `GET /v1/capabilities`: what each pool (provider) can do right now — engines, models and their
 * context, slots, endpoints, queue, limits and features — built from live state and cached.
 */
@Injectable()
export class CapabilitiesService {
  private cached: { at: number; doc: CapabilitiesDocument } | undefined;

  constructor(
    @Inject(CLOCK) private readonly clock: Clock,
    private readonly providers: ProvidersService,
    private readonly fleet: Fleet,
    private readonly queue: AdmissionQueue,
    private readonly routing: RoutingConfigHolder,
    private readonly tenants: TenantsService,
    private readonly router: Router,
    @Optional() private readonly loading?: LoadingModels,
  ) {
    // A load that starts, progresses or ends shows at once, not after the cache's 5 s.
    loading?.onChange(() => (this.cached = undefined));
  }

  document(): CapabilitiesDocument {
    const now = this.clock.now();
    if (this.cached && now - this.cached.at < CACHE_MS) return this.cached.doc;
    const doc: CapabilitiesDocument = {
      api_version: apiVersion(),
      generated_at: new Date(now).toISOString(),
      pools: this.providers.list().map((p) => this.pool(p)),
    };
    this.cached = { at: now, doc };
    return doc;
  }

  private pool(p: Provider): PoolCapabilities {
    const workers = [...this.fleet.sessions.ofProvider(p.name)];
    const engines = new Map<string, { type: string; version?: string }>();
    const workloads = new Set<string>();
    const loaded = new Map<string, LoadedModel & { caps: Set<string> }>();
    const now = this.clock.now();
    // The same slots and readiness as /v1/pools/:id/health (pool-capacity.ts).
    const capacity = poolCapacity(workers, (w) => this.router.health.of(w).isEjected(now));
    for (const w of workers) {
      if (w.runner) engines.set(`${w.runner.type}@${w.runner.version ?? ''}`, { ...w.runner });
      for (const e of w.endpoints ?? INFERENCE_ENDPOINTS) workloads.add(e);
      if (!w.draining) for (const model of w.models) this.addModel(loaded, model, p, w);
    }
    const ctxMax = Math.max(0, ...[...loaded.values()].map((m) => m.context_length ?? 0));
    const runners = workers.filter((w) => w.runnerCapabilities).map((w) => ({ worker: w.name, capabilities: w.runnerCapabilities! }));
    const features = ['streaming', 'cancellation', 'openai', 'anthropic', 'aliases', 'fallbacks', 'priorities', 'tenant_fairness', 'tasks'];
    // Governed load/unload/flush can reach this pool only through workers that negotiated them.
    if (workers.some((w) => !w.draining && w.features.has(Features.MODEL_LIFECYCLE))) features.push('model_lifecycle');
    for (const e of ['/v1/responses', '/v1/embeddings', '/v1/completions']) if (workloads.has(e)) features.push(e.slice(4));
    for (const c of CAPABILITY_FLAGS) if ([...loaded.values()].some((m) => m.caps.has(c))) features.push(c);
    if (this.routing.current.allowPinning) features.push('pinning');
    const defaults = this.tenants.defaultSettings();
    return {
      id: p.name,
      engines: [...engines.values()],
      ...(ctxMax > 0 ? { ctx_max: ctxMax } : {}),
      ...runnerFacts(workers, ctxMax),
      slots: capacity.slots,
      workers: workers.length,
      supported_workloads: [...workloads].sort(),
      models: {
        loaded: [...loaded.values()].map(({ caps: _caps, ...m }) => m),
        loading: this.loading?.loadingIn(p.name) ?? [],
        available: [...p.declaredModels].filter((m) => !loaded.has(m)), // exact names, not allow-list globs
      },
      queue: {
        depth: this.queue.depth(p.name),
        max_depth: p.maxQueueLen,
        avg_wait_ms: this.queue.stats.avgWaitMs(p.name),
        p95_wait_ms: this.queue.stats.p95WaitMs(p.name),
      },
      rate_limits: { default_rpm: defaults.rpm, default_tpm: defaults.tpm, per_tenant: true },
      features,
      health: { enabled: p.enabled, ready: p.enabled && !p.cordon && capacity.serving },
      ...(runners.length > 0 ? { runners } : {}),
    };
  }

  /** One worker's view of a model: the context it allows and what it declares it can do. */
  private addModel(loaded: Map<string, LoadedModel & { caps: Set<string> }>, model: string, p: Provider, w: WorkerSnapshot): void {
    let m = loaded.get(model);
    if (!m) loaded.set(model, (m = { id: model, capabilities: [], workers: 0, caps: new Set() }));
    m.workers++;
    const caps = effectiveCapabilities(model, p.capabilities, w.capabilities);
    if (caps.context_length !== undefined) m.context_length = Math.max(m.context_length ?? 0, caps.context_length);
    for (const c of CAPABILITY_FLAGS) if (caps[c] === true) m.caps.add(c);
    m.capabilities = [...m.caps].sort();
  }
}

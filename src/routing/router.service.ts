import { Inject, Injectable, Logger, OnModuleInit, Optional } from '@nestjs/common';
import { isDeepStrictEqual } from 'node:util';
import { APP_CONFIG, AppConfig } from '../config';
import { CLOCK, Clock } from '../common/clock';
import { Errors, GatewayError } from '../common/gateway-error';
import { Provider, ProvidersService } from '../providers/providers.service';
import { ownerAllows } from '../providers/model-ownership';
import { ModelCapabilities } from '../protocol';
import { Fleet } from '../fleet/fleet.service';
import { WorkerDirectory } from '../fleet/worker-index';
import { capabilitiesOf, RoutableWorker, servesModel, toSnapshotData, WorkerSnapshot, WorkerSnapshotData } from '../fleet/worker-snapshot';
import { WorkerRecords } from '../registry/worker-records.port';
import { MetricsService } from '../observability/metrics.service';
import { declaredFor, missingCapabilities } from './capabilities';
import { RouteDecision, RoutePlan, RouteRequest } from './route-plan';
import { resolveAlias, RoutingConfig } from '../config/sections/routing';
import { RoutingConfigHolder } from './routing-config-holder';
import { effectivePriority, loadSignal } from './scoring';
import { BoundedAffinity } from './affinity';
import { ListedModel, listModels, ModelListFilter } from './model-listing';
import { createStrategy, RoutingStrategy } from './strategies';
import { HealthTracker, WorkerHealth } from './worker-health';
import { ModelVerdict, noEligibleWorker } from './no-eligible-worker';

export type { RouteDecision, RoutePlan, RouteRequest, RouteTranslation } from './route-plan';

/** Retry hint for a model whose only workers are draining (they usually come back after a restart). */
const DRAINING_RETRY_MS = 1000;

/**
 * Every routing decision — on arrival and when a worker frees a slot — goes through here:
 * aliases, fallbacks, pinning, the capability filter, worker health and the strategy. Pure and
 * synchronous over in-memory state: it looks only at the workers serving the candidate models.
 *
 * The routing configuration comes from the RoutingConfigHolder; a reload replaces it as a whole
 * between two decisions (everything here is synchronous): requests planned earlier keep their plan.
 */
@Injectable()
export class Router implements OnModuleInit {
  private readonly log = new Logger('Router');
  private routing: RoutingConfig;
  private strategy: RoutingStrategy<RoutableWorker>;
  private affinity: BoundedAffinity<RoutableWorker>;
  /** Whether the decision in progress applies affinity (set by `judge`, read in its pass). */
  private affine = false;
  readonly health: HealthTracker;
  private readonly readyListeners: Array<(worker: RoutableWorker) => void> = [];
  private readonly registry: WorkerDirectory;

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    @Inject(CLOCK) private readonly clock: Clock,
    private readonly providers: ProvidersService,
    fleet: Fleet,
    private readonly records: WorkerRecords,
    private readonly metrics: MetricsService,
    @Optional() holder?: RoutingConfigHolder,
  ) {
    const routing = (holder ??= new RoutingConfigHolder(config)).current;
    this.routing = routing;
    this.strategy = createStrategy<RoutableWorker>(routing.strategy, routing.weights);
    this.affinity = new BoundedAffinity(routing.affinity.loadFactor);
    this.health = new HealthTracker(routing.ejection);
    holder.onReplace((next, previous) => this.useRouting(next, previous));
    this.registry = fleet.directory;
    fleet.on('workerJoined', ({ worker }) => this.health.attachWorker(worker, this.clock.now()));
    fleet.on('workerGone', ({ worker, orphans }) => {
      // Losing a request before its first byte counts as one of the worker's failures (another
      // replica's worker leaving this replica's view is that replica's business, not a failure).
      if (!worker.remote && orphans.some((lease) => !lease.responding)) this.failed(worker, 'disconnect');
      this.health.detachWorker(worker, this.clock.now());
    });
  }

  /** A reloaded configuration: the strategy starts afresh only if it or its weights changed. */
  private useRouting(next: RoutingConfig, previous: RoutingConfig): void {
    this.routing = next;
    if (next.strategy !== previous.strategy || !isDeepStrictEqual(next.weights, previous.weights)) {
      this.strategy = createStrategy<RoutableWorker>(next.strategy, next.weights);
    }
    if (next.affinity.loadFactor !== previous.affinity.loadFactor) this.affinity = new BoundedAffinity(next.affinity.loadFactor);
    this.health.setPolicy(next.ejection);
  }

  onModuleInit(): void {
    for (const w of this.routing.warnings) this.log.warn(w);
  }

  get strategyName(): string {
    return this.strategy.name;
  }

  // ---------------------------------------------------------------- planning

  /**
   * Resolves alias, fallback chain and pin; fails only for a bad pin. A global alias
   * (`routing.aliases`) wins over a pool-scoped one; a pool-scoped alias routes within its pool as
   * if the request pinned it, and a request pinned to another pool does not see it.
   */
  plan(req: RouteRequest): RoutePlan | GatewayError {
    let pin: Provider | undefined;
    if (req.pin !== undefined) {
      if (!this.routing.allowPinning) return Errors.invalidParams('Provider pinning (x-switchboard-provider) is disabled', 'x-switchboard-provider');
      pin = this.providers.get(req.pin);
      if (pin && req.allowedPools && !req.allowedPools.has(pin.name)) {
        return Errors.invalidParams(`Provider '${pin.name}' is not one of this tenant's pools`, 'x-switchboard-provider');
      }
      if (!pin) return Errors.invalidParams(`Unknown provider '${req.pin.slice(0, 64)}' in x-switchboard-provider`, 'x-switchboard-provider');
      if (!pin.enabled) return Errors.poolUnready(pin.name, 'provider is disabled');
      if (pin.cordon) return Errors.poolUnavailable(pin.name);
    }
    // The router seed's step 5a: an alias applies only when the requested model itself has no
    // candidates, so a worker advertising the alias's name gets the request (it is not shadowed).
    // Only a name that is an alias is looked at (one pass over the workers advertising it).
    let target = resolveAlias(this.routing, req.model);
    const aliased = target !== undefined || this.providers.poolAlias(req.model) !== undefined;
    if (aliased && (!req.allowedModels || req.allowedModels.has(req.model))) {
      if (this.hasCandidates(req.model, pin, req)) target = req.model;
    }
    if (target === undefined) {
      const poolAlias = this.providers.poolAlias(req.model);
      // A pool alias of a pool the tenant may not use is no alias for it (the name routes as a model).
      if (poolAlias && (!pin || pin === poolAlias.provider) && (!req.allowedPools || req.allowedPools.has(poolAlias.provider.name))) {
        pin = poolAlias.provider;
        if (!pin.enabled) return Errors.poolUnready(pin.name, 'provider is disabled');
        if (pin.cordon) return Errors.poolUnavailable(pin.name);
        target = poolAlias.target;
      } else target = req.model;
    }
    if (req.allowedModels && !req.allowedModels.has(target)) return Errors.modelNotAllowed(target);
    const chain = this.routing.fallbacks.get(target) ?? (target !== req.model ? this.routing.fallbacks.get(req.model) : undefined);
    let candidates: string[] = [target];
    if (chain && chain.length > 0) {
      candidates = [target];
      for (const fb of chain) {
        const model = resolveAlias(this.routing, fb) ?? fb;
        if (!candidates.includes(model) && (!req.allowedModels || req.allowedModels.has(model))) candidates.push(model);
      }
    }
    return {
      requested: req.model,
      target,
      candidates,
      requirements: req.requirements,
      native: req.requirements,
      translation: req.translation,
      pin,
      pools: req.allowedPools,
      affinityKey: req.affinityKey,
    };
  }

  /**
   * Whether a worker advertising exactly `model` (not a `*` worker) could take a request for it:
   * its pool may serve the model and is enabled, uncordoned, allowed and not another than the pin;
   * the worker is healthy and has the capabilities. Busy workers count (the request would wait for
   * them). Looks only at the workers advertising that name.
   */
  private hasCandidates(model: string, pin: Provider | undefined, req: RouteRequest): boolean {
    const workers = this.registry.servingExactly(model);
    if (workers.size === 0) return false;
    const owners = this.providers.ownersOf(model);
    const now = this.clock.now();
    for (const w of workers) {
      const provider = this.providers.get(w.provider);
      if (!provider || !provider.enabled || provider.cordon || (pin && pin !== provider) || !ownerAllows(owners, provider)) continue;
      if (req.allowedPools && !req.allowedPools.has(provider.name)) continue;
      if (!this.isHealthy(w, now)) continue;
      if (!missingCapabilities(req.requirements, declaredFor(provider.capabilities, model), capabilitiesOf(w, model), w.endpoints)) return true;
    }
    return false;
  }

  // ---------------------------------------------------------------- deciding

  /** Arrival (and requeue): a worker with a free slot, a queue to wait in, or an error. */
  route(plan: RoutePlan): RouteDecision {
    if (plan.translated !== undefined) this.translate(plan, false);
    const verdicts: ModelVerdict[] = [];
    for (const model of plan.candidates) {
      // The model asked for comes first, natively or else translated; a fallback only when neither can serve it.
      let v = this.judge(model, plan);
      if (!v.eligible && plan.translation) {
        this.translate(plan, true);
        const translated = this.judge(model, plan);
        if (translated.eligible) v = translated;
        else this.translate(plan, false);
      }
      if (v.eligible) return this.decide(model, plan, v);
      verdicts.push(v);
    }
    return noEligibleWorker(plan, verdicts, this.providers, this.records);
  }

  /** Switches the plan to its translation's requirements, or back to its own. */
  private translate(plan: RoutePlan, on: boolean): void {
    plan.requirements = on ? plan.translation!.requirements : plan.native;
    plan.translated = on ? plan.translation!.kind : undefined;
  }

  /** Assign to the chosen free worker, or queue for the model's eligible (busy) ones. */
  private decide(model: string, plan: RoutePlan, v: ModelVerdict): RouteDecision {
    if (v.chosen) {
      this.metrics.affinityDecision(this.affine ? this.affinity.result : 'none');
      return { kind: 'assign', worker: v.chosen, model };
    }
    return { kind: 'queue', model, provider: plan.pin ?? v.provider! };
  }

  /** A translated request may go to the pool's workers: its `translation` setting, else `routing.translation`. */
  private translatesFor(provider: Provider): boolean {
    return (provider.translation ?? this.routing.translation) !== 'never';
  }

  /**
   * Pull path: whether `worker`, which has a free slot, may take a request waiting for `model`
   * under `plan` (same filters as on arrival).
   */
  canServe(worker: WorkerSnapshot, plan: RoutePlan, model: string): boolean {
    if (worker.freeSlots <= 0 || !servesModel(worker, model) || plan.avoid?.has(worker.id)) return false;
    const provider = this.providers.get(worker.provider);
    if (!provider || !provider.enabled || (plan.pin && plan.pin !== provider)) return false;
    if ((plan.pools && !plan.pools.has(provider.name)) || !this.providers.mayServe(provider, model)) return false;
    if (!this.isHealthy(worker, this.clock.now())) return false;
    if (plan.translated !== undefined && !this.translatesFor(provider)) return false;
    return !missingCapabilities(plan.requirements, declaredFor(provider.capabilities, model), capabilitiesOf(worker, model), worker.endpoints);
  }

  /** Pull path: the strategy's pick among every free eligible worker for a waiting request. */
  pick(plan: RoutePlan, model: string): RoutableWorker | undefined {
    const chosen = this.judge(model, plan).chosen;
    if (chosen) this.metrics.affinityDecision(this.affine ? this.affinity.result : 'none');
    return chosen;
  }

  /** One pass over the model's workers: filters, and offers the free eligible ones to the strategy. */
  private judge(model: string, plan: RoutePlan): ModelVerdict {
    const v: ModelVerdict = { eligible: false, unhealthy: 0, soonestReturn: Infinity };
    const now = this.clock.now();
    this.strategy.begin();
    this.affine = plan.affinityKey !== undefined && this.routing.affinity.enabled;
    if (this.affine) this.affinity.begin(plan.affinityKey!);
    // One cached lookup per candidate model; each worker's provider is then checked against it.
    const owners = this.providers.ownersOf(model);
    this.judgeWorkers(this.registry.servingExactly(model), model, plan, now, v, owners);
    const wildcards = this.registry.wildcardWorkers();
    if (wildcards.size > 0) this.judgeWorkers(wildcards, model, plan, now, v, owners, true);
    // Affinity's worker within the load bound, else the strategy's pick among the free ones.
    v.chosen = (this.affine ? this.affinity.end() : undefined) ?? this.strategy.end();
    return v;
  }

  private judgeWorkers(
    workers: ReadonlySet<RoutableWorker>,
    model: string,
    plan: RoutePlan,
    now: number,
    v: ModelVerdict,
    owners: ReadonlySet<Provider>,
    wildcardPass = false,
  ): void {
    // Workers of one model mostly share a provider: look it up once per run of the same name.
    let providerName: string | undefined;
    let provider: Provider | undefined;
    let providerCaps: ModelCapabilities | undefined;
    let permitted = false;
    for (const w of workers) {
      // Already judged by its exact name, or held out of routing by an unload.
      if (wildcardPass && (w.models.has(model) || w.heldOut.has(model))) continue;
      if (w.provider !== providerName) {
        providerName = w.provider;
        provider = this.providers.get(providerName);
        providerCaps = provider && declaredFor(provider.capabilities, model);
        // The provider may serve the model (ownership) and is one of the tenant's pools.
        permitted = provider !== undefined && ownerAllows(owners, provider) && (!plan.pools || plan.pools.has(provider.name));
      }
      if (!provider || !permitted || !provider.enabled || (plan.pin && plan.pin !== provider)) continue;
      if (provider.cordon) {
        v.cordoned ??= provider;
        continue;
      }
      if (plan.translated !== undefined && !this.translatesFor(provider)) continue;
      const missing = missingCapabilities(plan.requirements, providerCaps, capabilitiesOf(w, model), w.endpoints);
      if (missing) {
        v.missing ??= new Set();
        for (const m of missing) v.missing.add(m);
        continue;
      }
      const health = this.health.of(w);
      if (!this.isHealthy(w, now, health) || plan.avoid?.has(w.id)) {
        v.unhealthy++;
        v.soonestReturn = Math.min(v.soonestReturn, health.isEjected(now) ? health.ejectedUntil - now : DRAINING_RETRY_MS);
        continue;
      }
      if (!v.eligible) {
        v.eligible = true;
        v.provider = provider;
      }
      // Load: assigned + held, plus load the worker reports beyond what the gateway gave it, or
      // its KV-cache usage × slots when it reports that and it is higher (scoring.ts).
      const load = loadSignal(w);
      const free = w.freeSlots > 0;
      // Priority: the worker's declared one, never better than its provider's floor.
      const priority = effectivePriority(provider.priority, w.declaredPriority);
      if (this.affine) this.affinity.eligible(w, load, free, priority);
      if (free) this.strategy.offer(w, priority, load, health.latencyMs);
    }
  }

  private isHealthy(w: WorkerSnapshot, now: number, health = this.health.of(w)): boolean {
    if (w.draining || health.isEjected(now)) return false;
    // The link closes a silent worker at the heartbeat timeout; until then it gets no new work.
    return now - w.lastSeenAt <= this.config.heartbeatTimeoutMs;
  }

  /** The worker as plain data, with routing's view of its health (for another replica or an operator). */
  snapshotOf(w: WorkerSnapshot): WorkerSnapshotData {
    const h = this.health.of(w);
    return toSnapshotData(w, {
      consecutive_failures: h.consecutiveFailures,
      ejected_until: h.isEjected(this.clock.now()) ? h.ejectedUntil : 0,
      latency_ms: h.latencySamples > 0 ? Math.round(h.latencyMs) : null,
    });
  }

  /** The provider of that name as it is now (undefined once deleted; a new object once replaced). */
  provider(name: string): Provider | undefined {
    return this.providers.get(name);
  }

  /** The worker's routing priority: its declared one, never better than its provider's floor. */
  priorityOf(w: WorkerSnapshot): number {
    return effectivePriority(this.providers.get(w.provider)?.priority ?? null, w.declaredPriority);
  }

  // ---------------------------------------------------------------- worker health

  /** Called when a worker's ejection ends, so queued requests can reach it. */
  onWorkerReady(listener: (worker: RoutableWorker) => void): void {
    this.readyListeners.push(listener);
  }

  firstByte(worker: WorkerSnapshot, ms: number): void {
    this.health.recordLatency(this.health.of(worker), ms);
  }

  succeeded(worker: WorkerSnapshot): void {
    this.health.recordSuccess(this.health.of(worker));
  }

  /** A request failed on this worker before its first byte (error frame, 5xx, disconnect). */
  failed(worker: WorkerSnapshot, cause: string): void {
    const now = this.clock.now();
    const health = this.health.of(worker);
    const outcome = this.health.recordFailure(health, now);
    if (!outcome) return;
    this.metrics.workerEjection(worker.provider);
    this.log.warn({
      msg: 'worker ejected after failures in a row',
      worker_id: worker.id,
      worker_name: worker.name,
      provider: worker.provider,
      failures: health.consecutiveFailures,
      cause,
      ejected_for_ms: outcome.ejectedForMs,
    });
    this.wakeWhenBack(worker.provider, health, outcome.ejectedForMs);
  }

  /**
   * When an ejection ends, every live connection of that name may take queued work again. Timers
   * may fire a little early by the wall clock, so an early wake-up waits for the rest.
   */
  private wakeWhenBack(provider: string, health: WorkerHealth, inMs: number): void {
    this.clock.setTimeout(() => {
      const left = health.ejectedUntil - this.clock.now();
      if (left > 0) return this.wakeWhenBack(provider, health, left);
      for (const w of this.registry.ofProvider(provider)) {
        if (this.health.of(w) === health) for (const l of this.readyListeners) l(w);
      }
    }, inMs);
  }

  // ---------------------------------------------------------------- listing

  /**
   * `/v1/models`: models of healthy-enough workers of enabled providers, and aliases of them; with
   * a caller's restrictions, only what that caller could route to (model-listing.ts).
   */
  listModels(caller: ModelListFilter = {}): ListedModel[] {
    return listModels(this.registry, this.providers, this.routing.aliases, caller);
  }
}

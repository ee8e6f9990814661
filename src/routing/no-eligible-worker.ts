import { Errors, GatewayError } from '../common/gateway-error';
import { cordonCovers, Provider, ProvidersService } from '../providers/providers.service';
import { ownerAllows } from '../providers/model-ownership';
import type { RoutableWorker } from '../fleet/worker-snapshot';
import { WorkerRecords } from '../registry/worker-records.port';
import type { RouteDecision, RoutePlan } from './router.service';

/** Why a candidate model could not take the request right now. */
export interface ModelVerdict {
  /** Eligible workers exist (whether or not one has a free slot). */
  eligible: boolean;
  /** The strategy's pick among eligible workers with a free slot. */
  chosen?: RoutableWorker;
  /** Provider of the first eligible worker (where a request waits when all are busy). */
  provider?: Provider;
  /** Workers that serve the model but lack capabilities: the union of what they lack. */
  missing?: Set<string>;
  /** Workers that serve the model with the right capabilities but are ejected, draining or silent. */
  unhealthy: number;
  /** A cordoned pool whose workers serve the model (they are not eligible). */
  cordoned?: Provider;
  /** Soonest time an ejected worker returns. */
  soonestReturn: number;
}

/**
 * No candidate has an eligible worker. Without a fallback chain the answer says why (capability
 * gap 400, only unhealthy workers 503, unknown 404) or the request waits for a known model's
 * workers to connect; with a chain, 503 fallback_exhausted.
 */
export function noEligibleWorker(plan: RoutePlan, verdicts: ModelVerdict[], providers: ProvidersService, records: WorkerRecords): RouteDecision {
  const reject = (error: GatewayError): RouteDecision => ({ kind: 'reject', error });
  const missing = new Set<string>();
  for (const v of verdicts) for (const m of v.missing ?? []) missing.add(m);
  if (plan.pin) {
    // Never a silent fallback to other providers: say why the pinned one cannot serve.
    if (plan.pin.cordon) return reject(Errors.poolUnavailable(plan.pin.name));
    const unhealthy = verdicts.some((v) => v.unhealthy > 0);
    if (missing.size > 0 && !unhealthy) return reject(Errors.capabilityMismatch(plan.target, [...missing]));
    return reject(Errors.poolUnready(plan.pin.name, unhealthy ? `no healthy worker for model '${plan.target}'` : `no worker serves model '${plan.target}'`));
  }
  if (plan.candidates.length > 1) {
    return reject(Errors.fallbackExhausted([...plan.candidates], missing.size > 0 ? [...missing] : undefined));
  }
  const [v] = verdicts;
  const model = plan.target;
  if (v.unhealthy > 0) return reject(Errors.noHealthyWorker(model, Math.max(1, Math.ceil(v.soonestReturn))));
  if (v.cordoned) return reject(Errors.poolUnavailable(v.cordoned.name));
  if (missing.size > 0) return reject(Errors.capabilityMismatch(model, [...missing]));
  const known = providerKnowing(model, plan.pools, providers, records);
  if (known instanceof GatewayError) {
    return reject(plan.requested !== plan.target && known.code === 'model_not_found' ? Errors.aliasTargetNotFound(plan.requested, model) : known);
  }
  return { kind: 'queue', model, provider: known };
}

/**
 * A model no live worker serves is still "known" when a provider declares it or one of its
 * workers served it recently: requests wait for a worker rather than fail.
 */
function providerKnowing(model: string, pools: ReadonlySet<string> | undefined, providers: ProvidersService, records: WorkerRecords): Provider | GatewayError {
  let disabledKnows = false;
  let cordoned: Provider | undefined;
  const owners = providers.ownersOf(model);
  for (const p of providers.all()) {
    // Only a pool that may serve the model, and that the tenant may use, is worth waiting for:
    // another tenant's pool is reported as if the model did not exist (404 model_not_found).
    if ((pools && !pools.has(p.name)) || !ownerAllows(owners, p)) continue;
    const cordonKnows = p.cordon !== undefined && cordonCovers(p.cordon, model);
    if (!cordonKnows && !p.declaredModels.has(model) && !records.recentlyKnowsModel(p.name, model)) continue;
    if (!p.enabled) disabledKnows = true;
    else if (p.cordon) cordoned ??= p;
    else return p;
  }
  // A drained pool is the reason, when no other pool could take the request.
  if (cordoned) return Errors.poolUnavailable(cordoned.name);
  return disabledKnows ? Errors.providerDisabled() : Errors.modelNotFound(model);
}

import type { GatewayError } from '../common/gateway-error';
import type { Provider } from '../providers/providers.service';
import type { RoutableWorker } from '../fleet/worker-snapshot';
import type { RequestRequirements } from './requirements';
import type { AffinityKey } from './affinity-key';

/** What routing needs to know about a request (serialisable). */
export interface RouteRequest {
  /** The model the client asked for. */
  model: string;
  requirements: RequestRequirements;
  /** `x-switchboard-provider`: route only within this provider. */
  pin?: string;
  /** Models the caller may use (its API key's or tenant's list), compared after alias resolution. */
  allowedModels?: ReadonlySet<string>;
  /** Pools (provider names) the caller's tenant may use (`tenants.<t>.pools`); undefined = all. */
  allowedPools?: ReadonlySet<string>;
  /** Cache affinity key, computed once when the request was parsed (routing/affinity-key.ts); undefined = none. */
  affinityKey?: AffinityKey;
  /** How the request may reach a worker that lacks its endpoint (translate/): used when no native worker is eligible. */
  translation?: RouteTranslation;
}

/** A translation of the request for workers serving another endpoint (chat completions, `/tokenize`). */
export interface RouteTranslation {
  /** What it is called in `x-switchboard-translated` (`anthropic-messages`, `openai-responses`, `count-tokens`). */
  kind: string;
  /** The request's requirements with the translation's endpoint. */
  requirements: RequestRequirements;
}

/** A request's routing plan, made once on arrival and reused on requeue. */
export interface RoutePlan {
  requested: string;
  /** The alias target (global or pool-scoped), or the requested model. */
  target: string;
  /** `[target, ...fallbacks]`: tried in order when a model has no eligible worker. */
  candidates: readonly string[];
  /** What a worker must have: the request's own requirements, or its translation's while `translated` is set. */
  requirements: RequestRequirements;
  /** The request's own requirements (its endpoint as the client sent it). */
  native: RequestRequirements;
  /** The translation routing may fall back to when no worker serves the endpoint natively. */
  translation?: RouteTranslation;
  /** Set by `route` when the decision is a translated one (the translation's kind); cleared on the next native decision. */
  translated?: string;
  /** `x-switchboard-provider`, or the provider owning the pool-scoped alias that was asked for. */
  pin?: Provider;
  /** Ids of workers that failed this request before its first byte: a requeue avoids them. */
  avoid?: Set<string>;
  /** The tenant's pools: no worker of another pool ever gets the request. */
  pools?: ReadonlySet<string>;
  /** The request's cache affinity key (see RouteRequest). */
  affinityKey?: AffinityKey;
}

export type RouteDecision =
  { kind: 'assign'; worker: RoutableWorker; model: string } | { kind: 'queue'; model: string; provider: Provider } | { kind: 'reject'; error: GatewayError };

import type { ProvidersService } from '../providers/providers.service';
import type { WorkerDirectory } from '../fleet/worker-index';
import { servesModel, WorkerSnapshot } from '../fleet/worker-snapshot';

export interface ListedModel {
  id: string;
  provider: string;
  createdAt: number;
}

/** What `/v1/models` may show a caller (its identity's restrictions). */
export interface ModelListFilter {
  /** Models its key/tenant allows (compared after alias resolution); undefined = all. */
  allowedModels?: ReadonlySet<string>;
  /** Pools its tenant may use; undefined = all. */
  allowedPools?: ReadonlySet<string>;
}

/**
 * `/v1/models`: models of healthy-enough workers of enabled providers, and aliases of them. Only
 * what the caller could route to: models its key/tenant allows, served by pools its tenant may
 * use, and always only by workers whose provider may serve them (model ownership). Not on the
 * request path: it walks the registry.
 */
export function listModels(
  registry: WorkerDirectory,
  providers: ProvidersService,
  aliases: ReadonlyMap<string, string>,
  { allowedModels, allowedPools }: ModelListFilter,
): ListedModel[] {
  const usable = (w: WorkerSnapshot, model: string): boolean => {
    if (w.draining) return false;
    const p = providers.get(w.provider);
    return p !== undefined && p.enabled && (!allowedPools || allowedPools.has(p.name)) && providers.mayServe(p, model);
  };
  const served = new Map<string, ListedModel>();
  for (const model of registry.advertisedModels()) {
    for (const w of registry.servingExactly(model)) {
      if (!usable(w, model)) continue;
      const prev = served.get(model);
      if (!prev || prev.createdAt > w.connectedAt) served.set(model, { id: model, provider: w.provider, createdAt: w.connectedAt });
    }
  }
  // A usable `*` worker serves any target its provider may serve, so aliases of such targets are servable.
  const viaWildcard = (target: string): ListedModel | undefined => {
    let first: WorkerSnapshot | undefined;
    for (const w of registry.wildcardWorkers()) if (usable(w, target) && (!first || w.connectedAt < first.connectedAt)) first = w;
    return first && { id: target, provider: first.provider, createdAt: first.connectedAt };
  };
  const out = new Map<string, ListedModel>();
  for (const [model, entry] of served) if (!allowedModels || allowedModels.has(model)) out.set(model, entry);
  for (const [alias, target] of aliases) {
    // A pattern (`claude-*`) names no model of its own: clients ask for names it matches.
    if (alias.endsWith('*') || out.has(alias) || (allowedModels && !allowedModels.has(target))) continue;
    const entry = served.get(target) ?? viaWildcard(target);
    if (entry) out.set(alias, { ...entry, id: alias });
  }
  // A pool-scoped alias is listed while a usable worker of its pool serves the target.
  for (const [alias, { provider, target }] of providers.poolAliases()) {
    if (out.has(alias) || !provider.enabled || provider.cordon || (allowedModels && !allowedModels.has(target))) continue;
    let first: WorkerSnapshot | undefined;
    for (const w of registry.ofProvider(provider.name)) {
      if (servesModel(w, target) && usable(w, target) && (!first || w.connectedAt < first.connectedAt)) first = w;
    }
    if (first) out.set(alias, { id: alias, provider: provider.name, createdAt: first.connectedAt });
  }
  return [...out.values()];
}

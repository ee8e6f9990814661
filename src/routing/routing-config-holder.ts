import { Inject, Injectable, Optional } from '@nestjs/common';
import { isDeepStrictEqual } from 'node:util';
import { APP_CONFIG, AppConfig } from '../config';
import { ConfigReloadService, PreparedChange } from '../config/config-reload.service';
import { ProvidersService } from '../providers/providers.service';
import { RoutingConfig } from '../config/sections/routing';

type RoutingListener = (next: RoutingConfig, previous: RoutingConfig) => void;

/** `{from, to}` of a changed setting, or the added/updated/removed entries of a changed map. */
export type RoutingChanges = Record<string, { from: unknown; to: unknown } | { added: string[]; updated: string[]; removed: string[] }>;

/**
 * The running routing configuration. A reload replaces the whole RoutingConfig at once: the
 * Router keeps a reference to the current one (its hot path reads it as before, at no extra cost)
 * and is told synchronously when it is replaced. `routing.max_retries` is the same setting as
 * MAX_REQUEUES and needs a restart: the running value is kept.
 */
@Injectable()
export class RoutingConfigHolder {
  private routing: RoutingConfig;
  private readonly listeners: RoutingListener[] = [];

  constructor(
    @Inject(APP_CONFIG) config: AppConfig,
    @Optional() reload?: ConfigReloadService,
    @Optional() private readonly providers?: ProvidersService,
  ) {
    this.routing = config.routing;
    reload?.register({ section: 'routing', order: 1, prepare: (next) => this.prepare(next.routing) });
  }

  get current(): RoutingConfig {
    return this.routing;
  }

  /** Called (synchronously) after the configuration was replaced. */
  onReplace(listener: RoutingListener): void {
    this.listeners.push(listener);
  }

  /** Swaps the configuration in and tells the listeners, in one synchronous step. */
  replace(next: RoutingConfig): void {
    const previous = this.routing;
    this.routing = next;
    for (const l of this.listeners) l(next, previous);
  }

  private prepare(next: RoutingConfig): PreparedChange {
    const shadowed: string[] = [];
    for (const alias of next.aliases.keys()) {
      const owner = this.providers?.poolAlias(alias)?.provider.name;
      if (owner !== undefined) shadowed.push(`routing.aliases.${alias}: also an alias of pool "${owner}"; the global alias wins`);
    }
    return {
      warnings: [...next.warnings, ...shadowed],
      commit: () => {
        const previous = this.routing;
        const incoming: RoutingConfig = { ...next, maxRetries: previous.maxRetries };
        const changes = routingChanges(previous, incoming);
        if (Object.keys(changes).length > 0) this.replace(incoming);
        return changes;
      },
    };
  }
}

/** What differs between two routing configurations, by the file's key names. */
export function routingChanges(from: RoutingConfig, to: RoutingConfig): RoutingChanges {
  const out: RoutingChanges = {};
  const scalar = (key: string, a: unknown, b: unknown) => {
    if (!isDeepStrictEqual(a, b)) out[key] = { from: a, to: b };
  };
  scalar('strategy', from.strategy, to.strategy);
  scalar('weights', from.weights, to.weights);
  const aliases = mapChanges(from.aliases, to.aliases);
  if (aliases) out.aliases = aliases;
  const fallbacks = mapChanges(from.fallbacks, to.fallbacks);
  if (fallbacks) out.fallbacks = fallbacks;
  scalar('allow_pinning', from.allowPinning, to.allowPinning);
  scalar('eject_after_failures', from.ejection.ejectAfterFailures, to.ejection.ejectAfterFailures);
  scalar('eject_cooldown_secs', from.ejection.cooldownMs / 1000, to.ejection.cooldownMs / 1000);
  scalar('eject_max_cooldown_secs', from.ejection.maxCooldownMs / 1000, to.ejection.maxCooldownMs / 1000);
  scalar('affinity', from.affinity, to.affinity);
  scalar('expose_worker_header', from.exposeWorkerHeader, to.exposeWorkerHeader);
  return out;
}

function mapChanges<V>(from: ReadonlyMap<string, V>, to: ReadonlyMap<string, V>): { added: string[]; updated: string[]; removed: string[] } | undefined {
  const added: string[] = [];
  const updated: string[] = [];
  const removed: string[] = [];
  for (const [key, value] of to) {
    if (!from.has(key)) added.push(key);
    else if (!isDeepStrictEqual(from.get(key), value)) updated.push(key);
  }
  for (const key of from.keys()) if (!to.has(key)) removed.push(key);
  return added.length + updated.length + removed.length > 0 ? { added, updated, removed } : undefined;
}

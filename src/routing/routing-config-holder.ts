import { Inject, Injectable, Optional } from '@nestjs/common';
import { isDeepStrictEqual } from 'node:util';
import { APP_CONFIG, AppConfig } from '../config';
import { ConfigReloadService, PreparedChange } from '../config/config-reload.service';
import { fieldAt } from '../config/restart-settings';
import { Setting } from '../config/setting';
import { SETTING_GROUPS } from '../config/settings';
import { ProvidersService } from '../providers/providers.service';
import { RoutingConfig } from '../config/sections/routing';

type RoutingListener = (next: RoutingConfig, previous: RoutingConfig) => void;

/** `{from, to}` of a changed setting, or the added/updated/removed entries of a changed map. */
export type RoutingChanges = Record<string, { from: unknown; to: unknown } | { added: string[]; updated: string[]; removed: string[] }>;

/**
 * The routing keys, from their declarations (every group whose AppConfig root is `routing`:
 * routing.ts and routing-affinity.ts): a key added there is compared, applied and reported by a
 * reload without a list here to forget it in. `name` is its key under `routing:` (`affinity.enabled`).
 */
const ROUTING_KEYS = SETTING_GROUPS.filter((g) => g.root === 'routing').flatMap((g) =>
  Object.values<Setting>(g.settings).map((s) => ({ name: s.yaml ?? s.env!, setting: s })),
);
const LIVE_KEYS = ROUTING_KEYS.filter((k) => k.setting.reload === 'live');
/** RoutingConfig fields of the `restart` keys (`maxRetries`, the watchdog timeouts): a reload keeps the running ones. */
const RESTART_FIELDS = ROUTING_KEYS.filter((k) => k.setting.reload === 'restart').flatMap((k) => k.setting.fields);

/**
 * The running routing configuration. A reload replaces the whole RoutingConfig at once: the
 * Router keeps a reference to the current one (its hot path reads it as before, at no extra cost)
 * and is told synchronously when it is replaced. Its `restart` keys (`max_retries`, the same
 * setting as MAX_REQUEUES, and the watchdog timeouts) keep their running values; the reload
 * lists them in `restart_required` (config-reload.service.ts).
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
        const incoming = withFieldsOf(previous, next, RESTART_FIELDS);
        const changes = routingChanges(previous, incoming);
        if (Object.keys(changes).length > 0) this.replace(incoming);
        return changes;
      },
    };
  }
}

/**
 * What differs between two routing configurations, one entry per live key by its name under
 * `routing:`. A key differs when any AppConfig field it declares does; the entry shows its first
 * field (the key's own value; the others are derived from it, as the alias patterns are), seconds
 * as seconds, and a map as the names added, updated and removed.
 */
export function routingChanges(from: RoutingConfig, to: RoutingConfig): RoutingChanges {
  const out: RoutingChanges = {};
  for (const { name, setting } of LIVE_KEYS) {
    if (setting.fields.every((f) => isDeepStrictEqual(fieldAt(from, f), fieldAt(to, f)))) continue;
    const [a, b] = [fieldAt(from, setting.fields[0]), fieldAt(to, setting.fields[0])];
    if (a instanceof Map && b instanceof Map) out[name] = mapChanges(a, b) ?? { added: [], updated: [], removed: [] };
    else out[name] = setting.type === 'seconds' ? { from: (a as number) / 1000, to: (b as number) / 1000 } : { from: a, to: b };
  }
  return out;
}

/** `next`, with the values of `fields` (dotted paths) taken from `previous`. */
function withFieldsOf(previous: RoutingConfig, next: RoutingConfig, fields: string[]): RoutingConfig {
  const out: Record<string, unknown> = { ...next };
  for (const path of fields) {
    const steps = path.split('.');
    let into = out;
    for (const step of steps.slice(0, -1)) into = into[step] = { ...(into[step] as object) } as Record<string, unknown>;
    into[steps[steps.length - 1]] = fieldAt(previous, path);
  }
  return out as unknown as RoutingConfig;
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

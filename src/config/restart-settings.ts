/**
 * Which changes of a reloaded configuration need a restart, derived from the declarations: every
 * `restart` key the file can set is compared through the AppConfig fields it declares, and named
 * by its YAML path (`queue.aging_secs`). Keys only the environment sets are never compared: the
 * gateway's environment cannot change while it runs.
 */
import { isDeepStrictEqual } from 'node:util';
import type { AppConfig } from './app-config';
import { Setting, SettingGroup, yamlPath } from './setting';
import { SETTING_GROUPS } from './settings';

export interface RestartKey {
  /** The YAML path `restart_required` lists. */
  name: string;
  /** AppConfig fields (dotted paths from the root) the key decides. */
  fields: string[];
}

export function restartKeys(groups: SettingGroup[] = SETTING_GROUPS): RestartKey[] {
  const out: RestartKey[] = [];
  for (const g of groups) {
    for (const s of Object.values<Setting>(g.settings)) {
      const name = yamlPath(g, s);
      if (s.reload !== 'restart' || name === undefined) continue;
      out.push({ name, fields: s.fields.map((f) => (g.root ? `${g.root}.${f}` : f)) });
    }
  }
  return out;
}

/** The value at a dotted path (`authLimiter.windowMs`), undefined when a step is missing. */
export function fieldAt(config: unknown, path: string): unknown {
  let v = config;
  for (const step of path.split('.')) v = v !== null && typeof v === 'object' ? (v as Record<string, unknown>)[step] : undefined;
  return v;
}

/** Names of the keys among `keys` whose fields differ between the two configurations, in order. */
export function changedKeys(keys: RestartKey[], before: AppConfig, after: AppConfig): string[] {
  const out: string[] = [];
  for (const k of keys) {
    if (out.includes(k.name)) continue;
    if (k.fields.some((f) => !isDeepStrictEqual(fieldAt(before, f), fieldAt(after, f)))) out.push(k.name);
  }
  return out;
}

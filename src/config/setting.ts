/**
 * One declaration per configuration key: its environment variable (and aliases), its YAML key, type,
 * default, reload class and description. The loader reads keys through these declarations, the
 * reload diff compares the fields they name (restart-settings.ts), and docs/configuration.md's
 * tables are rendered from them (docs-table.ts), so a key's name is written in one place only.
 */
import { Env, NumberOpts, Reader } from '../common/config-reader';

/** `live`: a reload applies it (providers, routing, tenants); `restart`: a change is reported in `restart_required`. */
export type ReloadClass = 'live' | 'restart';

interface SettingBase {
  /** Environment variable; the environment wins over the file. */
  env?: string;
  /** Older names of the same variable, read when `env` is not set (the first one set wins). */
  aliases?: string[];
  /** Key in its group's YAML mapping (the group's `section` is prefixed). */
  yaml?: string;
  reload: ReloadClass;
  /**
   * AppConfig fields (dotted, relative to the group's `root`) this key decides. A `restart` key with
   * a YAML key is listed in `restart_required` when one of them differs after a reload.
   */
  fields: string[];
  /** What the key does: the description column of docs/configuration.md. */
  doc: string;
  /** The default as the docs show it, when not the bare value (`` `1048576` (1 MiB) ``, `none (CORS off)`). */
  docDefault?: string;
  /** docs/configuration.md table the key is listed in (default `main`). */
  table?: string;
}

export interface StringSetting extends SettingBase {
  type: 'string';
  default?: string;
}
/** `number` is read as is; `seconds` (fractions allowed) is turned into milliseconds. */
export interface NumberSetting extends SettingBase {
  type: 'number' | 'seconds';
  default: number;
  opts: NumberOpts;
}
export interface BoolSetting extends SettingBase {
  type: 'bool';
  default: boolean;
}
/** A key with a shape of its own (lists, mappings, patterns): declared here, read by its section's code. */
export interface CustomSetting extends SettingBase {
  type: 'custom';
  default?: string | number | boolean;
}
export type Setting = StringSetting | NumberSetting | BoolSetting | CustomSetting;

type Decl<S extends Setting> = Omit<S, 'type'>;
export const num = (s: Decl<NumberSetting>): NumberSetting => ({ ...s, type: 'number' });
export const secs = (s: Decl<NumberSetting>): NumberSetting => ({ ...s, type: 'seconds' });
export const bool = (s: Decl<BoolSetting>): BoolSetting => ({ type: 'bool', ...s });
export const custom = (s: Decl<CustomSetting>): CustomSetting => ({ type: 'custom', ...s });
export function str(s: Decl<StringSetting> & { default: string }): StringSetting & { default: string };
export function str(s: Decl<StringSetting>): StringSetting;
export function str(s: Decl<StringSetting>): StringSetting {
  return { type: 'string', ...s };
}

/** The keys of one YAML mapping (`section`, '' = top level) that fill one part of AppConfig (`root`). */
export interface SettingGroup<T extends Record<string, Setting> = Record<string, Setting>> {
  /** YAML section (`usage`), '' for top-level keys (which may also sit under `server:`). */
  section: string;
  /** AppConfig field the `fields` are relative to (`usage`), '' for AppConfig itself. */
  root: string;
  settings: T;
}

export function group<T extends Record<string, Setting>>(section: string, root: string, settings: T): SettingGroup<T> {
  return { section, root, settings };
}

/** The YAML keys of a group, in declaration order (the "known:" lists of messages). */
export function yamlKeys(g: SettingGroup): string[] {
  const out: string[] = [];
  for (const s of Object.values<Setting>(g.settings)) if (s.yaml && !out.includes(s.yaml)) out.push(s.yaml);
  return out;
}

/** The YAML path of a key as operators and `restart_required` name it (`queue.aging_secs`). */
export function yamlPath(g: SettingGroup, s: Setting): string | undefined {
  return s.yaml === undefined ? undefined : g.section ? `${g.section}.${s.yaml}` : s.yaml;
}

/** The variable a value comes from: `env`, else the first alias set, else `env` (for messages). */
export function envName(s: Setting, env: Env): string {
  const names = [s.env, ...(s.aliases ?? [])].filter((n): n is string => n !== undefined);
  return names.find((n) => env[n] !== undefined && env[n] !== '') ?? names[0] ?? '';
}

/** Reads a declared key: environment (or an alias) > YAML > default, with the Reader's checks and messages. */
export function read(r: Reader, env: Env, s: NumberSetting): number;
export function read(r: Reader, env: Env, s: BoolSetting): boolean;
export function read(r: Reader, env: Env, s: StringSetting & { default: string }): string;
export function read(r: Reader, env: Env, s: StringSetting): string | undefined;
export function read(r: Reader, env: Env, s: NumberSetting | BoolSetting | StringSetting): number | boolean | string | undefined {
  const name = envName(s, env);
  switch (s.type) {
    case 'number':
      return r.number(name, s.yaml, s.default, s.opts);
    case 'seconds':
      return r.seconds(name, s.yaml, s.default, s.opts);
    case 'bool':
      return r.bool(name, s.yaml, s.default);
    case 'string':
      return s.default === undefined ? r.string(name, s.yaml) : r.string(name, s.yaml, s.default);
  }
}

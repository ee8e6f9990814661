import { readFileSync } from 'node:fs';
import { parse as parseYaml } from 'yaml';
import { OPTIONS, OptionSpec } from './options';

// ---------------------------------------------------------------------------------------------
// Layers: each source is reduced to raw values keyed by option, with a label for messages.

export interface Raw {
  value: unknown;
  source: string;
}
export type Layer = Partial<Record<OptionSpec['key'], Raw>>;

export interface ParsedArgs {
  layer: Layer;
  help: boolean;
  version: boolean;
  problems: string[];
}

const BY_FLAG = new Map(OPTIONS.map((o) => [o.flag, o]));

export function parseArgs(argv: readonly string[]): ParsedArgs {
  const layer: Layer = {};
  const problems: string[] = [];
  let help = false;
  let version = false;
  const capabilityEntries: string[] = [];

  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === '--help' || arg === '-h') {
      help = true;
      continue;
    }
    if (arg === '--version') {
      version = true;
      continue;
    }
    if (!arg.startsWith('--')) {
      problems.push(`unexpected argument "${arg}"`);
      continue;
    }
    const eq = arg.indexOf('=');
    let name = eq === -1 ? arg.slice(2) : arg.slice(2, eq);
    let inline: string | undefined = eq === -1 ? undefined : arg.slice(eq + 1);
    let negated = false;
    if (!BY_FLAG.has(name) && name.startsWith('no-') && BY_FLAG.get(name.slice(3))?.kind === 'bool') {
      name = name.slice(3);
      negated = true;
    }
    const spec = BY_FLAG.get(name);
    if (!spec) {
      problems.push(`unknown option --${name}`);
      continue;
    }
    const source = `--${spec.flag}`;
    if (spec.kind === 'bool') {
      if (negated) {
        if (inline !== undefined) problems.push(`--no-${spec.flag} takes no value`);
        layer[spec.key] = { value: false, source };
      } else {
        layer[spec.key] = { value: inline ?? true, source };
      }
      continue;
    }
    if (inline === undefined) {
      const next = argv[i + 1];
      if (next === undefined || (next.startsWith('--') && next.length > 2)) {
        problems.push(`--${spec.flag} needs a value`);
        continue;
      }
      inline = next;
      i++;
    }
    if (spec.kind === 'capabilities') capabilityEntries.push(inline);
    else layer[spec.key] = { value: inline, source };
  }
  if (capabilityEntries.length > 0) layer.capabilities = { value: capabilityEntries, source: '--capability' };
  return { layer, help, version, problems };
}

export type Env = Record<string, string | undefined>;

export function envLayer(env: Env): Layer {
  const layer: Layer = {};
  for (const o of OPTIONS) {
    const v = env[o.env];
    if (v === undefined || v === '') continue;
    layer[o.key] = { value: o.kind === 'capabilities' ? splitCapabilityEnv(v) : v, source: o.env };
  }
  return layer;
}

function splitCapabilityEnv(v: string): string[] {
  return v
    .split(/[;\n]/)
    .map((s) => s.trim())
    .filter(Boolean);
}

export function fileLayer(path: string, problems: string[]): Layer {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (e) {
    problems.push(`config file "${path}" cannot be read: ${(e as Error).message}`);
    return {};
  }
  let doc: unknown;
  try {
    doc = parseYaml(text);
  } catch (e) {
    problems.push(`config file "${path}" is neither valid YAML nor JSON: ${(e as Error).message}`);
    return {};
  }
  if (doc === null || doc === undefined) return {};
  if (typeof doc !== 'object' || Array.isArray(doc)) {
    problems.push(`config file "${path}" must hold a mapping of settings`);
    return {};
  }
  const byFileKey = new Map(OPTIONS.filter((o) => o.file).map((o) => [o.file as string, o]));
  const layer: Layer = {};
  for (const [k, v] of Object.entries(doc as Record<string, unknown>)) {
    const spec = byFileKey.get(k);
    if (!spec) {
      problems.push(`config file "${path}": unknown key "${k}"`);
      continue;
    }
    if (v === null || v === undefined) continue;
    layer[spec.key] = { value: v, source: `${k} (config file)` };
  }
  return layer;
}

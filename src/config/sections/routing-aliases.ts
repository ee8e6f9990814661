import { Yaml } from '../../common/config-reader';

/**
 * `routing.aliases` and `routing.fallbacks`: reading, validation, and the alias lookup routing
 * uses (exact names first, then `prefix*` patterns such as `claude-*`, longest prefix first).
 */
export interface AliasTable {
  /** alias → target model (single level). */
  aliases: Map<string, string>;
  /** Aliases whose name ends in `*`: the prefix before it matches any model name starting with it, longest first. */
  aliasPatterns: ReadonlyArray<{ prefix: string; target: string }>;
  fallbacks: Map<string, string[]>;
}

/** The alias target for a requested name: an exact alias, else the longest `prefix*` alias matching it. */
export function resolveAlias(table: AliasTable, name: string): string | undefined {
  const exact = table.aliases.get(name);
  if (exact !== undefined || table.aliasPatterns.length === 0) return exact;
  for (const p of table.aliasPatterns) if (name.startsWith(p.prefix)) return p.target;
  return undefined;
}

/** The `prefix*` entries of the aliases, longest prefix first (a bare `*` matches every name). */
export function aliasPatternsOf(aliases: Map<string, string>): Array<{ prefix: string; target: string }> {
  const out: Array<{ prefix: string; target: string }> = [];
  for (const [alias, target] of aliases) if (alias.endsWith('*')) out.push({ prefix: alias.slice(0, -1), target });
  return out.sort((a, b) => b.prefix.length - a.prefix.length);
}

/** Model names in routing config: non-empty, trimmed, bounded. */
export function modelName(value: unknown): string | undefined {
  if (typeof value !== 'string') return undefined;
  const name = value.trim();
  return name && name.length <= 256 ? name : undefined;
}

/** `routing.aliases` (a mapping) and ROUTING_ALIASES (`alias=target,alias2=target2`, env wins per alias). */
export function readAliases(envValue: string | undefined, yamlValue: unknown, problems: string[]): Map<string, string> {
  const aliases = new Map<string, string>();
  const add = (alias: unknown, target: unknown, where: string) => {
    const a = modelName(alias);
    const t = modelName(target);
    if (!a || !t) return problems.push(`${where}: an alias and its target must be non-empty model names (at most 256 characters)`);
    aliases.set(a, t);
  };
  if (yamlValue !== undefined && yamlValue !== null) {
    if (typeof yamlValue !== 'object' || Array.isArray(yamlValue)) problems.push('routing.aliases must be a mapping of alias: target');
    else for (const [alias, target] of Object.entries(yamlValue as Yaml)) add(alias, target, `routing.aliases.${alias}`);
  }
  for (const entry of splitList(envValue, ',')) {
    const eq = entry.indexOf('=');
    add(eq < 0 ? '' : entry.slice(0, eq), entry.slice(eq + 1), `ROUTING_ALIASES entry "${entry}"`);
  }
  return aliases;
}

/** `routing.fallbacks` (model: [fallbacks]) and ROUTING_FALLBACKS (`model=fb1,fb2;model2=fb3`). */
export function readFallbacks(envValue: string | undefined, yamlValue: unknown, problems: string[]): Map<string, string[]> {
  const fallbacks = new Map<string, string[]>();
  const add = (model: unknown, chain: unknown, where: string) => {
    const m = modelName(model);
    const list = Array.isArray(chain) ? chain.map(modelName) : undefined;
    if (!m || !list || list.some((x) => x === undefined)) {
      return problems.push(`${where}: must map a model name to a list of model names`);
    }
    fallbacks.set(m, list as string[]);
  };
  if (yamlValue !== undefined && yamlValue !== null) {
    if (typeof yamlValue !== 'object' || Array.isArray(yamlValue)) problems.push('routing.fallbacks must be a mapping of model: [fallback, …]');
    else for (const [model, chain] of Object.entries(yamlValue as Yaml)) add(model, chain, `routing.fallbacks.${model}`);
  }
  for (const entry of splitList(envValue, ';')) {
    const eq = entry.indexOf('=');
    add(eq < 0 ? '' : entry.slice(0, eq), splitList(entry.slice(eq + 1), ','), `ROUTING_FALLBACKS entry "${entry}"`);
  }
  return fallbacks;
}

function splitList(value: string | undefined, separator: string): string[] {
  return (value ?? '')
    .split(separator)
    .map((s) => s.trim())
    .filter(Boolean);
}

/** Aliases are single-level (no alias to an alias, so no cycles); no model falls back to itself. */
export function checkAliasesAndFallbacks(config: AliasTable, problems: string[]): void {
  for (const [alias, target] of config.aliases) {
    if (alias === target) problems.push(`routing.aliases: "${alias}" points at itself`);
    else if (config.aliases.has(target)) {
      problems.push(`routing.aliases: "${alias}" → "${target}" points at another alias (aliases are single-level; a chain or cycle is not allowed)`);
    }
  }
  for (const [model, chain] of config.fallbacks) {
    const resolved = config.aliases.get(model) ?? model;
    for (const fb of chain) {
      if (fb === model || fb === resolved || (config.aliases.get(fb) ?? fb) === resolved) {
        problems.push(`routing.fallbacks: "${model}" falls back to itself${fb !== model ? ` (through "${fb}")` : ''}`);
      }
    }
    if (new Set(chain).size !== chain.length) problems.push(`routing.fallbacks: "${model}" lists a fallback twice`);
  }
}

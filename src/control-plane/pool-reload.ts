import { GatewayError } from '../common/gateway-error';
import type { PoolDeclarations, Provider } from '../providers/providers.service';
import { parseCapabilityDeclarations } from '../config/sections/routing';

/** A change refused as a whole: 400 `invalid_request` with `problems`, every one of them. */
export function rejectedWithProblems(what: string, problems: string[]): GatewayError {
  return new GatewayError('invalid_request', `${what} rejected (${problems.length} problem${problems.length === 1 ? '' : 's'}); nothing was changed`, {
    fields: { problems },
  });
}

/** What a pool reload is checked against. */
export interface PoolReloadContext {
  pool: Provider;
  /** Model names the pool's connected workers advertise by name (a `*` worker validates no name). */
  servedModels: ReadonlySet<string>;
  /** `routing.aliases`: they win over pool aliases, so a pool alias may not take one of their names. */
  globalAliases: ReadonlyMap<string, string>;
  /** The pool holding a pool alias of that name, if any. */
  aliasOwner(alias: string): string | undefined;
}

const FIELDS = ['models', 'aliases', 'capabilities'];
const MAX_MODELS = 10_000;

/** Model names: non-empty once trimmed, at most 256 characters (as in the config file's routing). */
function modelName(value: unknown): string | undefined {
  if (typeof value !== 'string') return undefined;
  const name = value.trim();
  return name && name.length <= 256 ? name : undefined;
}

/**
 * `POST /v1/pools/:id/reload {models?, aliases?, capabilities?}`: the pool's new declarations.
 * A field left out keeps its value; a field given replaces it as a whole. Every problem goes to
 * `problems` (nothing is applied when there is one):
 * - `models`: a list of model names;
 * - `aliases`: `{alias: target}`; each target must be a model of this pool — in the new `models`
 *   (or the current ones when `models` is left out) or advertised by name by one of its connected
 *   workers; single-level (a target may not be one of the pool's aliases); an alias may not be a
 *   global alias (`routing.aliases`) nor another pool's alias. When only `models` changes, the
 *   current aliases are checked against the new models too;
 * - `capabilities`: as `providers[].capabilities` in the config file.
 */
export function readPoolReload(raw: unknown, ctx: PoolReloadContext, problems: string[]): PoolDeclarations {
  const { pool } = ctx;
  let body: Record<string, unknown> = {};
  let parsed: unknown = {};
  if (typeof raw === 'string' && raw.trim() !== '') {
    try {
      parsed = JSON.parse(raw);
    } catch {
      problems.push('the request body is not valid JSON');
      parsed = {};
    }
  } else if (raw !== undefined && raw !== null && typeof raw !== 'string') parsed = raw;
  if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) problems.push('the request body must be a JSON object of models, aliases, capabilities');
  else body = parsed as Record<string, unknown>;
  for (const key of Object.keys(body)) if (!FIELDS.includes(key)) problems.push(`${key} is not a pool setting (known: ${FIELDS.join(', ')})`);

  const models = body.models === undefined ? pool.models : readModels(body.models, problems);
  let capabilities = pool.capabilities;
  if (body.capabilities === null) problems.push('capabilities must be a mapping of model: {vision, tools, json_mode, context_length} ({} clears them)');
  else if (body.capabilities !== undefined) capabilities = parseCapabilityDeclarations(body.capabilities, 'capabilities', problems);
  let aliases = pool.aliases;
  if (body.aliases !== undefined) aliases = readAliases(body.aliases, problems);
  if (body.aliases !== undefined || body.models !== undefined) checkAliases(aliases, new Set(models), ctx, problems);
  return { models, aliases, capabilities };
}

function readModels(value: unknown, problems: string[]): string[] {
  if (!Array.isArray(value)) {
    problems.push('models must be a list of model names');
    return [];
  }
  if (value.length > MAX_MODELS) problems.push(`models may list at most ${MAX_MODELS} models, got ${value.length}`);
  const out: string[] = [];
  value.forEach((m, i) => {
    const name = modelName(m);
    if (!name) problems.push(`models[${i}] must be a model name (a non-empty string of at most 256 characters)`);
    else if (!out.includes(name)) out.push(name);
  });
  return out;
}

function readAliases(value: unknown, problems: string[]): Record<string, string> {
  if (!value || typeof value !== 'object' || Array.isArray(value)) {
    problems.push('aliases must be a mapping of alias: target model ({} clears them)');
    return {};
  }
  const out: Record<string, string> = {};
  for (const [alias, target] of Object.entries(value as Record<string, unknown>)) {
    const a = modelName(alias);
    const t = modelName(target);
    if (!a || !t) problems.push(`aliases.${alias}: an alias and its target must be model names (non-empty strings of at most 256 characters)`);
    else out[a] = t;
  }
  return out;
}

function checkAliases(aliases: Record<string, string>, models: ReadonlySet<string>, ctx: PoolReloadContext, problems: string[]): void {
  const name = ctx.pool.name;
  for (const [alias, target] of Object.entries(aliases)) {
    if (alias === target) {
      problems.push(`aliases.${alias}: "${alias}" points at itself`);
      continue;
    }
    if (target in aliases) {
      problems.push(`aliases.${alias}: "${alias}" → "${target}" points at another alias (pool aliases are single-level)`);
    } else if (!models.has(target) && !ctx.servedModels.has(target)) {
      problems.push(`aliases.${alias}: target "${target}" is not a model of pool "${name}" (declare it in models, or connect a worker that serves it)`);
    }
    if (ctx.globalAliases.has(alias)) {
      problems.push(`aliases.${alias}: "${alias}" is a global alias (routing.aliases), which would win over the pool alias`);
    }
    const owner = ctx.aliasOwner(alias);
    if (owner !== undefined && owner !== name) problems.push(`aliases.${alias}: "${alias}" is already an alias of pool "${owner}"`);
  }
}

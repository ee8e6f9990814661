import { ModelCapabilities } from '../protocol';
import { RequestRequirements } from './requirements';

/**
 * The capabilities that decide whether a worker can take a request for `model`: each field the
 * provider declares wins over what the worker advertises (for the model, or for `*`); a field
 * nobody declares is unknown, and unknown means supported.
 */
function field<K extends keyof ModelCapabilities>(
  key: K,
  model: string,
  provider: Record<string, ModelCapabilities>,
  worker: Record<string, ModelCapabilities>,
): ModelCapabilities[K] | undefined {
  return provider[model]?.[key] ?? provider['*']?.[key] ?? worker[model]?.[key] ?? worker['*']?.[key];
}

/**
 * What the worker lacks for this request: `vision`, `tools`, `json_mode`, `context_length`, or the
 * endpoint path. Empty when it qualifies. Allocates only when something is missing.
 */
export function missingCapabilities(
  req: RequestRequirements,
  model: string,
  providerCaps: Record<string, ModelCapabilities>,
  workerCaps: Record<string, ModelCapabilities>,
  endpoints: ReadonlySet<string> | undefined,
): string[] | undefined {
  let missing: string[] | undefined;
  if (req.vision && field('vision', model, providerCaps, workerCaps) === false) (missing ??= []).push('vision');
  if (req.tools && field('tools', model, providerCaps, workerCaps) === false) (missing ??= []).push('tools');
  if (req.jsonMode && field('json_mode', model, providerCaps, workerCaps) === false) (missing ??= []).push('json_mode');
  if (req.estimatedTokens > 0) {
    const context = field('context_length', model, providerCaps, workerCaps);
    if (context !== undefined && req.estimatedTokens > context) (missing ??= []).push('context_length');
  }
  if (endpoints && !endpoints.has(req.endpoint)) (missing ??= []).push(req.endpoint);
  return missing;
}

/** The effective capabilities of a worker for a model, for operators' views. */
export function effectiveCapabilities(
  model: string,
  providerCaps: Record<string, ModelCapabilities>,
  workerCaps: Record<string, ModelCapabilities>,
): ModelCapabilities {
  const out: ModelCapabilities = {};
  for (const key of ['vision', 'tools', 'json_mode', 'context_length'] as const) {
    const v = field(key, model, providerCaps, workerCaps);
    if (v !== undefined) (out as Record<string, unknown>)[key] = v;
  }
  return out;
}

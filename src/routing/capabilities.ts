import { CAPABILITY_FIELDS, declaredFor, ModelCapabilities } from '../protocol';
import { RequestRequirements } from './requirements';

const FIELDS = CAPABILITY_FIELDS;

export { declaredFor };

/**
 * What the worker lacks for this request: `vision`, `tools`, `json_mode`, `context_length`, or the
 * endpoint path. Each field the provider declares wins over the worker's; a field nobody
 * declares is unknown, and unknown means supported. Undefined when the worker qualifies; runs
 * for every candidate worker, so it allocates only when something is missing.
 */
export function missingCapabilities(
  req: RequestRequirements,
  provider: ModelCapabilities | undefined,
  worker: ModelCapabilities | undefined,
  endpoints: ReadonlySet<string> | undefined,
): string[] | undefined {
  let missing: string[] | undefined;
  if (provider !== undefined || worker !== undefined) {
    if (req.vision && (provider?.vision ?? worker?.vision) === false) (missing ??= []).push('vision');
    if (req.tools && (provider?.tools ?? worker?.tools) === false) (missing ??= []).push('tools');
    if (req.jsonMode && (provider?.json_mode ?? worker?.json_mode) === false) (missing ??= []).push('json_mode');
    if (req.estimatedTokens > 0) {
      const context = provider?.context_length ?? worker?.context_length;
      if (context !== undefined && req.estimatedTokens > context) (missing ??= []).push('context_length');
    }
  }
  if (endpoints !== undefined && !endpoints.has(req.endpoint)) (missing ??= []).push(req.endpoint);
  return missing;
}

/** The effective capabilities of a worker for a model, for operators' views. */
export function effectiveCapabilities(
  model: string,
  providerCaps: Record<string, ModelCapabilities>,
  workerCaps: Record<string, ModelCapabilities>,
): ModelCapabilities {
  const provider = declaredFor(providerCaps, model);
  const worker = declaredFor(workerCaps, model);
  const out: ModelCapabilities = {};
  for (const key of FIELDS) {
    const v = provider?.[key] ?? worker?.[key];
    if (v !== undefined) (out as Record<string, unknown>)[key] = v;
  }
  return out;
}

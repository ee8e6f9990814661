import { ModelCapabilities } from './messages';

const FIELDS = ['vision', 'tools', 'json_mode', 'context_length'] as const;

/** The capability fields a declaration may carry, in their documented order. */
export const CAPABILITY_FIELDS: readonly (keyof ModelCapabilities)[] = FIELDS;

/**
 * What a set of declarations (a provider's, or a worker's) says about one model: the model's own
 * entry, field by field completed by the `*` entry. Undefined when neither exists. Pure, shared by
 * the fleet (a worker's declarations) and routing (a provider's).
 */
export function declaredFor(declarations: Record<string, ModelCapabilities>, model: string): ModelCapabilities | undefined {
  const own = declarations[model];
  const all = declarations['*'];
  if (own === undefined || all === undefined) return own ?? all;
  const out: ModelCapabilities = {};
  for (const key of FIELDS) {
    const v = own[key] ?? all[key];
    if (v !== undefined) (out as Record<string, unknown>)[key] = v;
  }
  return out;
}

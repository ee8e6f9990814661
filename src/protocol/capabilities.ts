import { ModelCapabilities } from './messages';
import { clampInt } from './number-bounds';

type CapabilityField = keyof ModelCapabilities;

/** A field's JSON type, in JSON Schema's words so that the OpenAPI document can use it as it is. */
type CapabilityType<T> = NonNullable<T> extends boolean ? { readonly type: 'boolean' } : { readonly type: 'integer'; readonly minimum: 1 };

/**
 * The capability fields and the type each takes, declared once (issue 17): the readers below, the
 * fields `declaredFor` completes, the discovery document's flags and the admin API's schema are all
 * derived from it (the `satisfies` keeps it in step with ModelCapabilities). What a field means to
 * routing (routing/capabilities.ts) is still said per field. In their documented order.
 */
export const CAPABILITY_TYPES = {
  vision: { type: 'boolean' },
  tools: { type: 'boolean' },
  json_mode: { type: 'boolean' },
  context_length: { type: 'integer', minimum: 1 },
} as const satisfies { readonly [K in CapabilityField]-?: CapabilityType<ModelCapabilities[K]> };

/** The capability fields a declaration may carry, in their documented order. */
export const CAPABILITY_FIELDS = Object.keys(CAPABILITY_TYPES) as readonly CapabilityField[];

/** The yes/no capabilities (every field but the context length). */
export type CapabilityFlag = { [K in CapabilityField]: (typeof CAPABILITY_TYPES)[K]['type'] extends 'boolean' ? K : never }[CapabilityField];

export const CAPABILITY_FLAGS = CAPABILITY_FIELDS.filter((f): f is CapabilityFlag => CAPABILITY_TYPES[f].type === 'boolean');

/**
 * How strictly a reader takes `context_length`. Every place that reads capabilities keeps the rule it
 * had before they shared this reader, because each rule is what its input's documentation promises:
 * - `hint`: a worker frame's hint (docs/protocol.md#numbers): a number below 1 (or NaN) says nothing
 *   and is ignored; any other is rounded up and lowered to `contextLength`;
 * - `clamped`: another replica's published worker: any number is brought into [1, contextLength],
 *   rounded up (its replica read it as a hint already; this only keeps a bad peer's data in range);
 * - `exact`: the worker daemon's own configuration: only a whole number in [1, contextLength] is
 *   taken, anything else is refused (and the operator told) rather than quietly corrected.
 * Flags are booleans in every mode: anything else is refused.
 */
export interface CapabilityBounds {
  contextLength: number;
  numbers: 'hint' | 'clamped' | 'exact';
}

/** One field's value read from untrusted input; undefined when absent or refused. */
export function readCapability<K extends CapabilityField>(field: K, v: unknown, bounds: CapabilityBounds): ModelCapabilities[K] | undefined {
  if (CAPABILITY_TYPES[field].type === 'boolean') return (typeof v === 'boolean' ? v : undefined) as ModelCapabilities[K] | undefined;
  if (typeof v !== 'number') return undefined;
  switch (bounds.numbers) {
    case 'hint':
      return (v >= 1 ? clampInt(v, 1, bounds.contextLength) : undefined) as ModelCapabilities[K] | undefined;
    case 'clamped':
      return clampInt(v, 1, bounds.contextLength) as ModelCapabilities[K] | undefined;
    case 'exact':
      return (Number.isInteger(v) && v >= 1 && v <= bounds.contextLength ? v : undefined) as ModelCapabilities[K] | undefined;
  }
}

/**
 * One model's capabilities read from untrusted input (a worker's frame, another replica's data):
 * each known field taken by its type (see CapabilityBounds), anything else left out. Never throws:
 * capabilities are hints, so a malformed entry is `{}` (nothing known), not an error.
 */
export function readCapabilities(raw: unknown, bounds: CapabilityBounds): ModelCapabilities {
  const out: Record<string, unknown> = {};
  if (!raw || typeof raw !== 'object') return out;
  const c = raw as Record<string, unknown>;
  for (const field of CAPABILITY_FIELDS) {
    const v = readCapability(field, c[field], bounds);
    if (v !== undefined) out[field] = v;
  }
  return out as ModelCapabilities;
}

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
  for (const key of CAPABILITY_FIELDS) {
    const v = own[key] ?? all[key];
    if (v !== undefined) (out as Record<string, unknown>)[key] = v;
  }
  return out;
}

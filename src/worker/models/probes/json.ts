/** Lenient readers for backend answers: anything unexpected is `undefined`, never an exception. */

export type JsonObject = Record<string, unknown>;

export function parseJsonObject(text: string): JsonObject | undefined {
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch {
    return undefined;
  }
  return asObject(doc);
}

export function asObject(v: unknown): JsonObject | undefined {
  return v && typeof v === 'object' && !Array.isArray(v) ? (v as JsonObject) : undefined;
}

/** Context sizes above this are not believed (a corrupt value must not look like a huge context). */
const MAX_CONTEXT = 100_000_000;

export function contextLength(v: unknown): number | undefined {
  return typeof v === 'number' && Number.isInteger(v) && v > 0 && v <= MAX_CONTEXT ? v : undefined;
}

export function bool(v: unknown): boolean | undefined {
  return typeof v === 'boolean' ? v : undefined;
}

/** A short printable label (runner versions), cut to `max` characters. */
export function label(v: unknown, max = 64): string | undefined {
  if (typeof v !== 'string') return undefined;
  const clean = v.replace(/[^\x20-\x7e]/g, '').trim();
  return clean ? clean.slice(0, max) : undefined;
}

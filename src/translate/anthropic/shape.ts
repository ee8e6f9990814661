/**
 * Reading untrusted JSON (client bodies, backend answers): each helper answers the value when it has
 * the expected shape and `undefined` otherwise, so callers never trust a field they did not check.
 */
export type Obj = Record<string, unknown>;

export function isObj(value: unknown): value is Obj {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

export function obj(value: unknown): Obj | undefined {
  return isObj(value) ? value : undefined;
}

export function str(value: unknown): string | undefined {
  return typeof value === 'string' ? value : undefined;
}

export function num(value: unknown): number | undefined {
  return typeof value === 'number' && Number.isFinite(value) ? value : undefined;
}

export function arr(value: unknown): unknown[] | undefined {
  return Array.isArray(value) ? value : undefined;
}

/** A token count from a backend: a finite, non-negative whole number, else 0 (usage must never read NaN). */
export function count(value: unknown): number {
  const n = num(value);
  return n !== undefined && n >= 0 ? Math.floor(n) : 0;
}

/** The JSON object a tool call's argument text encodes, or undefined (text, arrays and broken JSON are not arguments). */
export function parseObject(text: string): Obj | undefined {
  try {
    return obj(JSON.parse(text));
  } catch {
    return undefined;
  }
}

/** Helpers shared by the fake lifecycle backends (see fake-lifecycle.ts). */

export type Json = Record<string, unknown>;

export function body(text: string): Json {
  try {
    const v = JSON.parse(text) as unknown;
    return v && typeof v === 'object' && !Array.isArray(v) ? (v as Json) : {};
  } catch {
    return {};
  }
}

export const tick = () => new Promise<void>((r) => setImmediate(r));

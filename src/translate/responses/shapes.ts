import { randomUUID } from 'node:crypto';
import type { Json } from '../dialect-codec';

/** Where the codec's ids and its fallback clock come from (tests pass fixed ones to compare whole answers). */
export interface CodecSources {
  /** A new id with the given prefix (`resp_`, `msg_`, `fc_`, `rs_`, `call_`). */
  newId(prefix: string): string;
  /** Unix seconds, used only when the backend's answer carries no `created`. */
  nowSecs(): number;
}

export const defaultSources: CodecSources = {
  newId: (prefix) => `${prefix}${randomUUID().replace(/-/g, '')}`,
  nowSecs: () => Math.floor(Date.now() / 1000),
};

export function isRecord(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

export function str(value: unknown): string | undefined {
  return typeof value === 'string' ? value : undefined;
}

export function num(value: unknown): number | undefined {
  return typeof value === 'number' && Number.isFinite(value) ? value : undefined;
}

/** A count from a backend's usage object: a non-negative whole number, or 0 when absent or odd. */
export function count(value: unknown): number {
  const n = num(value);
  return n !== undefined && n >= 0 ? Math.floor(n) : 0;
}

import { HttpException } from '@nestjs/common';
import { GatewayError, statusOf } from '../common/gateway-error';

/**
 * Pure parts of an admin action's audit row (issue 21): the summary of what changed, with every
 * secret left out, and the outcome of an error. See docs/enterprise.md, "Audit trail".
 */

/** Field names whose values are never written to the trail: only that they were given. */
const SECRET_FIELD = /secret|token|password|passphrase|credential|authorization|cookie|hash|^key$|_key$|Key$|private/i;
export const REDACTED = '[redacted]';
/** A summary longer than this (as JSON) is cut down to the names of its fields. */
export const MAX_SUMMARY_CHARS = 4096;

/** `value` with the value of every secret-named field (at any depth) replaced by `[redacted]`. */
export function redact(value: unknown, depth = 0): unknown {
  if (depth > 8) return REDACTED;
  if (Array.isArray(value)) return value.map((v) => redact(v, depth + 1));
  if (value === null || typeof value !== 'object') return value;
  return Object.fromEntries(Object.entries(value as Record<string, unknown>).map(([k, v]) => [k, SECRET_FIELD.test(k) ? REDACTED : redact(v, depth + 1)]));
}

/** A request body as an object: parsed when it is JSON text (admin routes receive raw text), else undefined. */
export function bodyObject(body: unknown): Record<string, unknown> | undefined {
  let value = body;
  if (typeof body === 'string') {
    try {
      value = JSON.parse(body);
    } catch {
      return undefined;
    }
  }
  return value && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
}

/** The summary as stored: secrets redacted, bounded in size, null when there is nothing to say. */
export function summaryOf(raw: Record<string, unknown> | undefined): Record<string, unknown> | null {
  if (!raw || Object.keys(raw).length === 0) return null;
  const clean = redact(raw) as Record<string, unknown>;
  if (JSON.stringify(clean).length <= MAX_SUMMARY_CHARS) return clean;
  return { fields: Object.keys(clean).slice(0, 50), truncated: true };
}

/** Status, code and message of an error an admin route answered with. */
export function errorOutcome(error: unknown): { status: number; code: string; message: string } {
  if (error instanceof GatewayError) return { status: statusOf(error.code), code: error.code, message: error.message.slice(0, 1024) };
  if (error instanceof HttpException) return { status: error.getStatus(), code: `http_${error.getStatus()}`, message: error.message.slice(0, 1024) };
  return { status: 500, code: 'internal_error', message: 'Internal error' };
}

/** The summary of a configuration reload: what changed (names only) and what needs a restart. */
export function reloadSummary(result: unknown): Record<string, unknown> | undefined {
  if (!result || typeof result !== 'object') return undefined;
  const r = result as { changes?: unknown; restart_required?: unknown };
  return { changes: r.changes, restart_required: r.restart_required };
}

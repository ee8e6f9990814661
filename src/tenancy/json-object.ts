import { Errors } from '../common/gateway-error';

/**
 * Admin bodies arrive as raw strings (every body is kept as the string, see bootstrap.ts): the
 * JSON object in `raw`, or a 400 `invalid_request`.
 */
export function parseJsonObject(raw: unknown): Record<string, unknown> {
  if (typeof raw !== 'string' || raw.trim() === '') throw Errors.invalidRequest('Request body must be a JSON object');
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    throw Errors.invalidRequest('Request body is not valid JSON');
  }
  if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) throw Errors.invalidRequest('Request body must be a JSON object');
  return parsed as Record<string, unknown>;
}

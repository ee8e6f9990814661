import type { Json } from '../dialect-codec';
import { obj, str } from './shape';

/** Backend messages are echoed to the client, bounded (a backend may answer a whole HTML page). */
const MAX_MESSAGE = 1000;

/** Anthropic's error `type` for an HTTP status (the SDKs pick their exception class by status). */
export function anthropicErrorType(status: number): string {
  if (status === 401) return 'authentication_error';
  if (status === 403) return 'permission_error';
  if (status === 404) return 'not_found_error';
  if (status === 413) return 'request_too_large';
  if (status === 429) return 'rate_limit_error';
  if (status === 503 || status === 529) return 'overloaded_error';
  // As the gateway's own errors say it (src/common/error-dialect.ts): a timeout, not a failure.
  if (status === 504) return 'timeout_error';
  if (status >= 500) return 'api_error';
  return 'invalid_request_error';
}

/** The backend's own words: OpenAI's `{error: {message}}`, llama-server's and vLLM's variants, or the raw text. */
function messageOf(body: string, status: number): string {
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    parsed = undefined;
  }
  const root = obj(parsed);
  const error = root?.error;
  const found = str(obj(error)?.message) ?? str(error) ?? str(root?.message) ?? str(root?.detail) ?? (root ? undefined : body.trim());
  const text = found && found !== '' ? found : `The backend answered HTTP ${status}`;
  return text.length > MAX_MESSAGE ? `${text.slice(0, MAX_MESSAGE).replace(/[\uD800-\uDBFF]$/, '')}…` : text;
}

/** A backend error answer in Anthropic's shape `{type: "error", error: {type, message}}`. */
export function anthropicError(status: number, body: string): Json {
  return { type: 'error', error: { type: anthropicErrorType(status), message: messageOf(typeof body === 'string' ? body : '', status) } };
}

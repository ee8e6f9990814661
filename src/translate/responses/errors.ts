import type { Json } from '../dialect-codec';
import { isRecord, str } from './shapes';

/** How much of a backend's non-JSON error body the message quotes (an HTML error page can be large). */
const QUOTED_CHARS = 500;

function typeOf(status: number): string {
  if (status === 401) return 'authentication_error';
  if (status === 403) return 'permission_error';
  if (status === 404) return 'not_found_error';
  if (status === 429) return 'rate_limit_error';
  if (status >= 500) return 'server_error';
  return 'invalid_request_error';
}

/**
 * A backend error answer as an OpenAI error body `{error: {message, type, code, param}}`, which the
 * `openai` SDK turns into its typed errors. The backend's body is kept when it already is one; vLLM's
 * flat `{object: "error", message, type, code}` is nested; anything else is quoted in the message.
 */
export function errorFromChatAnswer(status: number, body: string): Json {
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    parsed = undefined;
  }
  if (isRecord(parsed) && isRecord(parsed.error) && typeof parsed.error.message === 'string') {
    return { ...parsed, error: withDefaults(parsed.error, status) };
  }
  // vLLM's own error shape: the fields at the top level, beside `object: "error"`.
  if (isRecord(parsed) && typeof parsed.message === 'string') return { error: withDefaults(parsed, status) };
  const text = body.trim();
  const quoted = text === '' ? '' : `: ${text.length > QUOTED_CHARS ? `${text.slice(0, QUOTED_CHARS)}…` : text}`;
  return { error: { message: `The backend answered with status ${status}${quoted}`, type: typeOf(status), code: null, param: null } };
}

/** The error object as given, with the fields the SDK reads filled in where the backend left them out. */
function withDefaults(error: Json, status: number): Json {
  const { object: _object, ...rest } = error;
  return { ...rest, type: str(error.type) ?? typeOf(status), code: error.code ?? null, param: error.param ?? null };
}

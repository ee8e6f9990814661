import { boundedRetryMs, GatewayError, GatewayErrorCode, isRetriable, kindOf, statusOf } from './gateway-error';

/** The API family a caller speaks, chosen by route. */
export type Dialect = 'openai' | 'anthropic';

export function dialectOf(path: string): Dialect {
  return path === '/v1/messages' || path.startsWith('/v1/messages/') || path.startsWith('/v1/messages?') ? 'anthropic' : 'openai';
}

function openAiType(status: number): string {
  if (status === 401) return 'authentication_error';
  if (status === 403) return 'permission_error';
  if (status === 404) return 'invalid_request_error';
  if (status === 429) return 'rate_limit_error';
  if (status === 504) return 'timeout_error';
  if (status >= 500) return 'server_error';
  return 'invalid_request_error';
}

function anthropicType(status: number, code: GatewayErrorCode): string {
  if (status === 401) return 'authentication_error';
  if (status === 403) return 'permission_error';
  if (status === 404) return 'not_found_error';
  if (status === 413) return 'request_too_large';
  if (status === 429) return 'rate_limit_error';
  if (status === 504) return 'timeout_error';
  if (status === 503 && code !== 'provider_deleted') return 'overloaded_error';
  if (status >= 500) return 'api_error';
  return 'invalid_request_error';
}

/** The JSON error body in the caller's dialect (also used as the SSE `error` event payload). */
export function errorBody(dialect: Dialect, error: GatewayError): Record<string, unknown> {
  const status = statusOf(error.code);
  const extra: Record<string, unknown> = { kind: kindOf(error.code), ...error.details.fields, retriable: isRetriable(error.code) };
  if (error.details.retryAfterMs !== undefined) extra.retry_after_ms = error.details.retryAfterMs;
  if (error.details.policyLabel !== undefined) extra.policy_label = error.details.policyLabel;
  if (dialect === 'anthropic') {
    return {
      type: 'error',
      error: { type: anthropicType(status, error.code), message: error.message, code: error.code, ...extra },
    };
  }
  return {
    error: {
      message: error.message,
      type: openAiType(status),
      code: error.code,
      param: error.details.param ?? null,
      ...extra,
    },
  };
}

/** Backpressure headers for retriable rejections that carry a retry hint. */
export function errorHeaders(error: GatewayError): Record<string, string> {
  if (error.details.retryAfterMs === undefined) return {};
  // Bounded whole numbers whatever the hint was computed from: a header value never reads NaN or Infinity.
  const raw = error.details.retryAfterMs;
  const ms = Number.isFinite(raw) && raw >= 0 && raw <= boundedRetryMs(raw) ? raw : boundedRetryMs(raw);
  return { 'retry-after': String(Math.max(1, Math.ceil(ms / 1000))), 'x-backoff-ms': String(ms) };
}

/**
 * One SSE `error` event; nothing may follow it on the stream. Its data is the dialect's error
 * body (what SDKs parse) plus the stream-failure fields at the top level: `code`, `kind`,
 * `retriable`, `retry_after_ms` when retriable, `message`.
 */
export function sseErrorEvent(dialect: Dialect, error: GatewayError): string {
  const data: Record<string, unknown> = {
    ...errorBody(dialect, error),
    code: error.code,
    kind: kindOf(error.code),
    retriable: isRetriable(error.code),
    message: error.message,
  };
  if (error.details.retryAfterMs !== undefined) data.retry_after_ms = error.details.retryAfterMs;
  return `event: error\ndata: ${JSON.stringify(data)}\n\n`;
}

/**
 * The one table of error codes: for each stable code, its HTTP status (the only such mapping), its
 * taxonomy kind (see docs/api.md for the table) and whether retrying the same request later can
 * succeed. `GatewayErrorCode` is derived from its keys. Data file: one line per code.
 */

/**
 * The error taxonomy every body carries as `kind` (the control-plane specification's kinds): what
 * sort of failure it is, whatever the precise `code`.
 */
export type ErrorKind =
  | 'ADMISSION_REJECT'
  | 'QUEUE_FULL_DROP_LRU'
  | 'INVALID_PARAMS'
  | 'POOL_UNREADY'
  | 'POOL_UNAVAILABLE'
  | 'REPLICA_EXHAUSTED'
  | 'DECODE_TIMEOUT'
  | 'WORKER_RESET'
  | 'INTERNAL';

/** What the table says about one code. */
export interface ErrorCodeSpec {
  status: number;
  kind: ErrorKind;
  /** Whether retrying the same request later can succeed. */
  retriable: boolean;
}

export const GATEWAY_ERROR_CODES = {
  invalid_request: { status: 400, kind: 'INVALID_PARAMS', retriable: false },
  model_not_found: { status: 404, kind: 'INVALID_PARAMS', retriable: false },
  unknown_model: { status: 400, kind: 'ADMISSION_REJECT', retriable: false },
  capability_mismatch: { status: 400, kind: 'ADMISSION_REJECT', retriable: false },
  fallback_exhausted: { status: 503, kind: 'POOL_UNAVAILABLE', retriable: true },
  no_healthy_worker: { status: 503, kind: 'POOL_UNAVAILABLE', retriable: true },
  invalid_params: { status: 400, kind: 'INVALID_PARAMS', retriable: false },
  pool_unready: { status: 503, kind: 'POOL_UNREADY', retriable: true },
  pool_unavailable: { status: 503, kind: 'POOL_UNAVAILABLE', retriable: true },
  model_not_allowed: { status: 403, kind: 'ADMISSION_REJECT', retriable: false },
  rate_limit_exceeded: { status: 429, kind: 'ADMISSION_REJECT', retriable: true },
  budget_exceeded: { status: 429, kind: 'ADMISSION_REJECT', retriable: true },
  context_exceeded: { status: 400, kind: 'ADMISSION_REJECT', retriable: false },
  // A session's budget never refills: the same task in the same session is refused again.
  session_budget_exceeded: { status: 429, kind: 'ADMISSION_REJECT', retriable: false },
  queue_full: { status: 429, kind: 'QUEUE_FULL_DROP_LRU', retriable: true },
  queue_timeout: { status: 504, kind: 'POOL_UNAVAILABLE', retriable: true },
  request_timeout: { status: 504, kind: 'DECODE_TIMEOUT', retriable: true },
  requeue_exhausted: { status: 503, kind: 'REPLICA_EXHAUSTED', retriable: true },
  provider_disabled: { status: 503, kind: 'POOL_UNREADY', retriable: true },
  provider_not_found: { status: 404, kind: 'INVALID_PARAMS', retriable: false },
  provider_deleted: { status: 503, kind: 'POOL_UNAVAILABLE', retriable: true },
  drain_timeout: { status: 503, kind: 'WORKER_RESET', retriable: true },
  worker_error: { status: 502, kind: 'WORKER_RESET', retriable: true },
  worker_disconnected: { status: 502, kind: 'WORKER_RESET', retriable: true },
  stream_too_large: { status: 502, kind: 'INTERNAL', retriable: false },
  client_too_slow: { status: 499, kind: 'INTERNAL', retriable: false },
  payload_too_large: { status: 413, kind: 'INVALID_PARAMS', retriable: false },
  artifact_quota_exceeded: { status: 413, kind: 'ADMISSION_REJECT', retriable: true },
  server_shutdown: { status: 503, kind: 'POOL_UNAVAILABLE', retriable: true },
  gateway_overloaded: { status: 503, kind: 'ADMISSION_REJECT', retriable: true },
  too_many_connections: { status: 503, kind: 'ADMISSION_REJECT', retriable: true },
  unauthorized: { status: 401, kind: 'ADMISSION_REJECT', retriable: false },
  invalid_api_key: { status: 401, kind: 'ADMISSION_REJECT', retriable: false },
  tenant_mismatch: { status: 403, kind: 'ADMISSION_REJECT', retriable: false },
  auth_rate_limited: { status: 429, kind: 'ADMISSION_REJECT', retriable: true },
  forbidden: { status: 403, kind: 'ADMISSION_REJECT', retriable: false },
  not_found: { status: 404, kind: 'INVALID_PARAMS', retriable: false },
  conflict: { status: 409, kind: 'INVALID_PARAMS', retriable: false },
  validation_failed: { status: 422, kind: 'INVALID_PARAMS', retriable: false },
  lifecycle_disabled: { status: 403, kind: 'ADMISSION_REJECT', retriable: false },
  lifecycle_unsupported: { status: 422, kind: 'INVALID_PARAMS', retriable: false },
  // The worker said why; the same token cannot be presented again anyway.
  lifecycle_failed: { status: 502, kind: 'WORKER_RESET', retriable: false },
  op_token_missing: { status: 401, kind: 'ADMISSION_REJECT', retriable: false },
  op_token_malformed: { status: 400, kind: 'INVALID_PARAMS', retriable: false },
  op_token_bad_signature: { status: 401, kind: 'ADMISSION_REJECT', retriable: false },
  op_token_expired: { status: 401, kind: 'ADMISSION_REJECT', retriable: false },
  op_token_replayed: { status: 401, kind: 'ADMISSION_REJECT', retriable: false },
  op_token_mismatch: { status: 403, kind: 'ADMISSION_REJECT', retriable: false },
  op_token_duplicate_signers: { status: 403, kind: 'ADMISSION_REJECT', retriable: false },
  op_token_unknown_signer: { status: 403, kind: 'ADMISSION_REJECT', retriable: false },
  op_token_insufficient_signers: { status: 403, kind: 'ADMISSION_REJECT', retriable: false },
  // Its token is spent (the nonce was claimed before the audit write): the same request cannot pass again.
  audit_unavailable: { status: 503, kind: 'INTERNAL', retriable: false },
  dependency_unavailable: { status: 503, kind: 'INTERNAL', retriable: true },
  internal_error: { status: 500, kind: 'INTERNAL', retriable: true },
} as const satisfies Record<string, ErrorCodeSpec>;

/** Domain errors' stable codes (the keys of the table above). */
export type GatewayErrorCode = keyof typeof GATEWAY_ERROR_CODES;

/** The taxonomy kind of an error code (see docs/api.md for the table). */
export function kindOf(code: GatewayErrorCode): ErrorKind {
  return GATEWAY_ERROR_CODES[code].kind;
}

/** The HTTP status for an error code (the only such mapping). */
export function statusOf(code: GatewayErrorCode): number {
  return GATEWAY_ERROR_CODES[code].status;
}

/** Whether retrying the same request later can succeed. */
export function isRetriable(code: GatewayErrorCode): boolean {
  return GATEWAY_ERROR_CODES[code].retriable;
}

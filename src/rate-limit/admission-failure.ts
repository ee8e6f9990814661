import { Errors, GatewayError } from '../common/gateway-error';

/** Node system error codes of a dependency that could not be reached or stopped answering. */
const UNREACHABLE = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH', 'ECONNABORTED']);
/** ioredis and driver error classes that mean "the server is not answering", not "our bug". */
const DEPENDENCY_ERRORS = new Set(['ReplyError', 'AbortError', 'MaxRetriesPerRequestError', 'RedisError', 'QueryFailedError', 'ConnectionIsNotSetError']);

/**
 * What the client is answered when admission (limiter, budget, Redis) fails instead of deciding:
 * `503 dependency_unavailable` (retriable) when a dependency is down or timed out, `500
 * internal_error` for anything else. Admission must always end in an answer: before this, an
 * exception thrown after the reply was taken over left the client waiting forever, and a rejected
 * Redis decision was an unhandled rejection that ended the process.
 */
export function admissionFailure(err: unknown): GatewayError {
  if (err instanceof GatewayError) return err;
  const e = err as { code?: unknown; name?: unknown; message?: unknown } | undefined;
  const code = typeof e?.code === 'string' ? e.code : '';
  const name = typeof e?.name === 'string' ? e.name : '';
  const message = typeof e?.message === 'string' ? e.message : '';
  if (UNREACHABLE.has(code) || DEPENDENCY_ERRORS.has(name) || /Connection is closed|Command timed out|Stream isn't writeable/.test(message)) {
    return Errors.dependencyUnavailable();
  }
  return Errors.internalError();
}

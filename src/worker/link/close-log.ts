import { CloseCodes, CloseReasons } from '../../protocol';
import { Logger } from '../logger';

const UNTRUSTED_HINT =
  'the gateway certificate is not signed by a CA this worker trusts: pass --ca-file with your private CA (or set NODE_EXTRA_CA_CERTS); --insecure-skip-verify is for tests only';

/** Node's TLS verification error codes → what an operator should do. */
const TLS_HINTS: Record<string, string> = {
  DEPTH_ZERO_SELF_SIGNED_CERT: UNTRUSTED_HINT,
  SELF_SIGNED_CERT_IN_CHAIN: UNTRUSTED_HINT,
  UNABLE_TO_VERIFY_LEAF_SIGNATURE: UNTRUSTED_HINT,
  UNABLE_TO_GET_ISSUER_CERT: UNTRUSTED_HINT,
  UNABLE_TO_GET_ISSUER_CERT_LOCALLY: UNTRUSTED_HINT,
  CERT_UNTRUSTED: UNTRUSTED_HINT,
  CERT_HAS_EXPIRED: 'the gateway certificate has expired (or this host clock is wrong)',
  CERT_NOT_YET_VALID: 'the gateway certificate is not valid yet (or this host clock is wrong)',
  ERR_TLS_CERT_ALTNAME_INVALID: 'the gateway certificate does not name this host: check the host in PROXY_URL',
};

/** A WebSocket error, with what to check for the ones an operator can fix. */
export function logSocketError(log: Logger, err: Error): void {
  const code = (err as NodeJS.ErrnoException).code;
  const tlsHint = code && Object.hasOwn(TLS_HINTS, code) ? TLS_HINTS[code] : undefined;
  if (tlsHint) {
    log.error('TLS verification of the gateway failed', { error: err.message, code, hint: tlsHint });
    return;
  }
  let hint: string | undefined;
  if (/Unexpected server response: (404|400|426)/.test(err.message)) {
    hint = 'is PROXY_URL the Switchboard gateway (it must serve /v1/worker/connect)?';
  } else if (err.message.startsWith('proxy ')) {
    hint = 'check HTTPS_PROXY / HTTP_PROXY (and NO_PROXY for hosts that must be reached directly)';
  }
  log.warn('gateway connection error', { error: err.message, hint });
}

export interface CloseContext {
  /** The link was draining or the worker stopping: a plain close is expected. */
  expected: boolean;
  cordonRetryMs: number;
  cordonRetryMaxMs: number;
}

/** One specific line per close the gateway can send (the reasons are part of the protocol contract). */
export function logClose(log: Logger, code: number, reason: string, ctx: CloseContext): void {
  const fields = { code, reason: reason || undefined };
  if (code === CloseCodes.POLICY_VIOLATION && reason === CloseReasons.AUTH_RATE_LIMITED) {
    log.error('worker authentication temporarily rate limited: the gateway is refusing this address after too many failed attempts', {
      ...fields,
      hint:
        'another worker on this host (or behind the same NAT or proxy) may be sending a wrong secret; your own secret may be fine. ' +
        'This worker keeps retrying with backoff and gets in once the block expires',
    });
  } else if (code === CloseCodes.POLICY_VIOLATION && reason === CloseReasons.AUTH_FAILED) {
    log.error('worker authentication failed: the gateway rejected the secret or the provider', {
      ...fields,
      hint: 'check WORKER_SECRET and the provider name (--provider / PROVIDER_NAME): the provider must exist, be enabled and have this secret',
    });
  } else if (code === CloseCodes.POLICY_VIOLATION) {
    log.error('gateway rejected this worker (policy violation)', { ...fields, hint: 'check WORKER_SECRET and --provider' });
  } else if (code === CloseCodes.PROTOCOL_ERROR) {
    log.error('gateway reported a protocol error: it did not accept a frame from this worker', {
      ...fields,
      hint: 'usually a protocol version mismatch: run matching gateway and worker versions',
    });
  } else if (code === CloseCodes.SERVICE_RESTART) {
    log.info('gateway restarting: reconnecting in about a second, without backoff penalty', fields);
  } else if (code === CloseCodes.TRY_AGAIN_LATER) {
    log.warn('gateway refused this worker: it is cordoned (an operator drained its pool or its worker name)', {
      ...fields,
      hint:
        'nothing is wrong with this worker; it is kept out of rotation until an operator runs POST /v1/pools/<provider>/undrain ' +
        `or POST /admin/workers/<id>/undrain on the gateway. It retries every ${Math.round(ctx.cordonRetryMs / 1000)}-${Math.round(ctx.cordonRetryMaxMs / 1000)} s`,
    });
  } else if (code === CloseCodes.NORMAL && reason === CloseReasons.DRAIN_COMPLETE) {
    log.info('drain complete: the gateway closed the link once this worker had finished its requests', fields);
  } else if (code === CloseCodes.NORMAL && reason === CloseReasons.DRAIN_TIMED_OUT) {
    log.warn('drain timed out: the gateway closed the link with requests still running past its drain deadline', fields);
  } else if (code === CloseCodes.NORMAL && reason === CloseReasons.HEARTBEAT_TIMEOUT) {
    log.warn('heartbeat timed out: the gateway heard no pong from this worker in time', {
      ...fields,
      hint: 'network loss, an overloaded worker host, or a proxy buffering the WebSocket',
    });
  } else if (code === CloseCodes.NORMAL || ctx.expected) {
    log.info('gateway connection closed', fields);
  } else {
    log.warn('gateway connection lost', fields);
  }
}

import type { IncomingHttpHeaders } from 'node:http';
import { Errors, GatewayError } from '../common/gateway-error';

/**
 * The model-runner API's cache-control request headers (../shared/spec/model-runner-api.txt):
 * validated at the edge, then forwarded to the worker (and its backend) unchanged.
 */
export const CACHE_MODE_HEADER = 'x-cache-mode';
export const CACHE_TAG_HEADER = 'x-cache-tag';
export const CACHE_MODES: readonly string[] = ['prefix', 'none', 'auto'];
export const MAX_CACHE_TAG_LENGTH = 64;

/** A 400 `invalid_request` naming the header, or undefined when both headers are absent or valid. */
export function checkCacheHeaders(headers: IncomingHttpHeaders): GatewayError | undefined {
  const mode = headers[CACHE_MODE_HEADER];
  if (mode !== undefined && (typeof mode !== 'string' || !CACHE_MODES.includes(mode))) {
    return Errors.invalidRequest(`${CACHE_MODE_HEADER} must be prefix, none or auto`, CACHE_MODE_HEADER);
  }
  const tag = headers[CACHE_TAG_HEADER];
  // Characters, not UTF-16 units: Node decodes header bytes as latin1, one character per byte.
  if (tag !== undefined && (typeof tag !== 'string' || [...tag].length > MAX_CACHE_TAG_LENGTH)) {
    return Errors.invalidRequest(`${CACHE_TAG_HEADER} must be at most ${MAX_CACHE_TAG_LENGTH} characters`, CACHE_TAG_HEADER);
  }
  return undefined;
}

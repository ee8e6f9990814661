import { Errors, GatewayError } from '../common/gateway-error';

export interface InferenceEnvelope {
  model: string;
  stream: boolean;
  /** The parsed body, for routing decisions that look inside (capabilities). */
  json: Record<string, unknown>;
}

/** Reads `model` and `stream` from a raw JSON body; the raw string itself is forwarded untouched. */
export function parseInferenceBody(raw: unknown): InferenceEnvelope | GatewayError {
  if (typeof raw !== 'string') return Errors.invalidRequest('Request body must be a JSON object');
  let json: unknown;
  try {
    json = JSON.parse(raw);
  } catch {
    // An empty or blank body is not "invalid JSON" but no object at all; only a failed parse is
    // checked for that, so a valid body is never copied by trim().
    if (raw.trim() === '') return Errors.invalidRequest('Request body must be a JSON object');
    return Errors.invalidRequest('Request body is not valid JSON');
  }
  if (!json || typeof json !== 'object' || Array.isArray(json)) {
    return Errors.invalidRequest('Request body must be a JSON object');
  }
  const body = json as Record<string, unknown>;
  if (typeof body.model !== 'string' || body.model.trim() === '') {
    return Errors.invalidRequest('"model" is required and must be a non-empty string', 'model');
  }
  if (body.stream !== undefined && body.stream !== null && typeof body.stream !== 'boolean') {
    return Errors.invalidRequest('"stream" must be a boolean', 'stream');
  }
  return { model: body.model, stream: body.stream === true, json: body };
}

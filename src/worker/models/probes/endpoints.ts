/**
 * The inference endpoints the gateway may relay; each is probed with POST {}. `/tokenize`
 * (llama-server, vLLM) lets the gateway answer `/v1/messages/count_tokens` with the model's own
 * tokenizer when the backend lacks that route.
 */
export const PROBED_ENDPOINTS = [
  '/v1/chat/completions',
  '/v1/completions',
  '/v1/responses',
  '/v1/embeddings',
  '/v1/messages',
  '/v1/messages/count_tokens',
  '/tokenize',
] as const;

/** `{}` names no model and no prompt: servers reject it in validation, before any inference. */
export const ENDPOINT_PROBE_BODY = '{}';

/**
 * Whether an answer to POST {} means the server has the route. 404 (no such route), 405 (no POST
 * there) and 501 (not implemented, e.g. llama-server's /v1/embeddings without --embeddings)
 * mean absent; any other status (400, 401, 422, even 500) came from a handler, so the route exists.
 * A 404 whose body talks about a model is a handler's "model '' not found" (Ollama answers an
 * empty model name that way), not a missing route.
 */
export function endpointPresent(status: number, body: string): boolean {
  if (status === 405 || status === 501) return false;
  if (status === 404) return /\bmodel\b/i.test(body.slice(0, 512));
  return true;
}

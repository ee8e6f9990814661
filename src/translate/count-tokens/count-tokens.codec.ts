import { Errors, GatewayError } from '../../common/gateway-error';
import { anthropicError } from '../anthropic/anthropic-errors';
import { arr, count, isObj, num } from '../anthropic/shape';
import type { ChatRequest, DialectCodec, Json } from '../dialect-codec';
import { countTokensText } from './count-tokens-text';

export { estimateInputTokens } from './count-tokens-text';

/**
 * The `/tokenize` body for a count_tokens body. llama-server reads `content`, vLLM reads `prompt`:
 * the same text goes in both, and each backend ignores the field it does not know.
 */
function toTokenize(body: Json): ChatRequest | GatewayError {
  if (!isObj(body)) return Errors.invalidRequest('body: must be a JSON object');
  if (!Array.isArray(body.messages)) return Errors.invalidRequest('messages: must be an array', 'messages');
  const text = countTokensText(body);
  const dropped = Object.keys(body).filter((k) => !['model', 'system', 'messages', 'tools'].includes(k));
  return { body: { model: body.model, content: text, prompt: text, add_special: true }, dropped };
}

/** vLLM answers `count` (and `tokens`), llama-server only `tokens`. */
function fromTokenize(answer: Json): Json {
  const n = isObj(answer) ? (num(answer.count) ?? arr(answer.tokens)?.length) : undefined;
  return { input_tokens: count(n) };
}

/** `POST /v1/messages/count_tokens` answered by a backend's tokenizer (`/tokenize`). */
export const countTokensCodec: DialectCodec = {
  kind: 'count-tokens',
  endpoint: '/tokenize',
  toChat: (body: Json): ChatRequest | GatewayError => toTokenize(body),
  fromChat: (answer: Json): Json => fromTokenize(answer),
  errorFromChat: (status: number, body: string): Json => anthropicError(status, body),
};

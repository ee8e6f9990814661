import type { ResponseSink } from '../dispatch/relay-request';
import type { DialectCodec, Json } from './dialect-codec';
import { CountTokensTranslation, RequestTranslation } from './request-translation';
import { responsesCodec } from './responses';
import { anthropicCodec } from './anthropic/anthropic.codec';
import { countTokensCodec, estimateInputTokens } from './count-tokens/count-tokens.codec';

/** The client paths a chat-completions (or `/tokenize`) worker can serve by translation, and how. */
const CODECS: Readonly<Record<string, DialectCodec>> = {
  '/v1/messages': anthropicCodec,
  '/v1/responses': responsesCodec,
  '/v1/messages/count_tokens': countTokensCodec,
};

/** The codec for a client path, if it can be translated. */
export function codecFor(endpoint: string): DialectCodec | undefined {
  return CODECS[endpoint];
}

/** What a translation of this request needs: the client's parsed body and its sink. */
export interface TranslationInput {
  endpoint: string;
  body: Json;
  streaming: boolean;
  model: string;
  sink: ResponseSink;
  correlationId: string;
}

/** The request's translation, when its path has one (native requests never use it unless routing says so). */
export function translationFor(input: TranslationInput): RequestTranslation | undefined {
  const codec = CODECS[input.endpoint];
  if (!codec) return undefined;
  if (codec.kind === 'count-tokens') return new CountTokensTranslation(codec, input.body, input.model, input.sink, input.correlationId, estimateInputTokens);
  return new RequestTranslation(codec, input.body, input.streaming, input.model, input.sink, input.correlationId);
}

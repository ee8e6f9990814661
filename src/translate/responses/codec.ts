import type { AnswerContext, ChatRequest, DialectCodec, Json, StreamTranslator } from '../dialect-codec';
import type { GatewayError } from '../../common/gateway-error';
import { fromChatAnswer } from './answer';
import { errorFromChatAnswer } from './errors';
import { toChatRequest } from './request';
import { CodecSources, defaultSources } from './shapes';
import { ResponsesStream } from './stream';

/** OpenAI Responses (`POST /v1/responses`) spoken to a backend that serves only chat completions. */
export function createResponsesCodec(sources: CodecSources = defaultSources): DialectCodec {
  return {
    kind: 'openai-responses',
    endpoint: '/v1/chat/completions',
    toChat: (body: Json, stream: boolean): ChatRequest | GatewayError => toChatRequest(body, stream),
    fromChat: (chat: Json, ctx: AnswerContext): Json => fromChatAnswer(chat, ctx, sources),
    errorFromChat: (status: number, body: string): Json => errorFromChatAnswer(status, body),
    stream: (ctx: AnswerContext): StreamTranslator => new ResponsesStream(ctx, sources),
  };
}

export const responsesCodec: DialectCodec = createResponsesCodec();

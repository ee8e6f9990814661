import type { AnswerContext, ChatRequest, DialectCodec, Json, StreamTranslator } from '../dialect-codec';
import type { GatewayError } from '../../common/gateway-error';
import { chatToMessage } from './anthropic-answer';
import { anthropicError } from './anthropic-errors';
import { messagesToChat } from './anthropic-request';
import { AnthropicStream } from './anthropic-stream';
import { isObj } from './shape';

/** The gateway hands over parsed JSON; a backend's `null` or array answer must not reach a field read. */
function safe(ctx: AnswerContext): AnswerContext {
  return { model: typeof ctx.model === 'string' ? ctx.model : '', request: isObj(ctx.request) ? ctx.request : {} };
}

/** Anthropic Messages (`/v1/messages`) spoken to a backend that serves only chat completions. */
export const anthropicCodec: DialectCodec = {
  kind: 'anthropic-messages',
  endpoint: '/v1/chat/completions',
  toChat: (body: Json, stream: boolean): ChatRequest | GatewayError => messagesToChat(body, stream),
  fromChat: (chat: Json, ctx: AnswerContext): Json => chatToMessage(isObj(chat) ? chat : {}, safe(ctx)),
  errorFromChat: (status: number, body: string): Json => anthropicError(status, body),
  stream: (ctx: AnswerContext): StreamTranslator => new AnthropicStream(safe(ctx)),
};

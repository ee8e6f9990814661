import type { GatewayError } from '../common/gateway-error';

/** A client body or a backend answer as parsed JSON (fields are untrusted: check every shape). */
export type Json = Record<string, unknown>;

/**
 * What a translated response says it was translated from (`x-switchboard-translated`), or
 * `count-tokens` for `/v1/messages/count_tokens` answered through a backend's `/tokenize`.
 */
export type TranslationKind = 'anthropic-messages' | 'openai-responses' | 'count-tokens';

/** The client's request as the codec needs it to shape answers (ids, echoed fields, the model it asked for). */
export interface AnswerContext {
  /** The model name the client sent (answers name it, whatever the backend calls its model). */
  model: string;
  /** The client's parsed body (Responses echoes `instructions`, `tools`, `metadata`, ...). */
  request: Json;
}

/** The translated request, and the client fields left out (the gateway logs them at debug). */
export interface ChatRequest {
  /** The body for the backend endpoint (`endpoint`); its `model` is replaced by the served model. */
  body: Json;
  dropped: string[];
}

/**
 * Turns a streamed chat-completions answer (the backend's SSE bytes, in chunks cut anywhere,
 * even inside a line or a UTF-8 sequence's string form) into the client's dialect's SSE events.
 */
export interface StreamTranslator {
  /** Backend text in; the client's SSE text out ('' while nothing is complete yet). */
  push(text: string): string;
  /**
   * The backend's stream ended: what is still owed to close the dialect's event sequence
   * (e.g. `message_delta` + `message_stop`, `response.completed`). Called once; nothing after it.
   */
  end(): string;
  /**
   * The gateway ends the stream early (timeout, client too slow, stream too large ...): the dialect's closing failure
   * events (Responses: close open items, then `response.failed` with `error: {code, message}`; Anthropic: one
   * `event: error` with Anthropic's error shape). Called at most once, instead of `end()`; nothing after it.
   */
  fail?(error: { code: string; message: string; status: number }): string;
}

/**
 * One client dialect spoken to a backend that lacks it (pure: no I/O, no clock, no config). The
 * gateway calls `toChat` once per request when routing picks translation, then exactly one of
 * `fromChat` / `errorFromChat` (whole answers) or `stream` (SSE answers).
 */
export interface DialectCodec {
  readonly kind: TranslationKind;
  /** The backend path the translated request goes to (`/v1/chat/completions`, `/tokenize`). */
  readonly endpoint: string;
  /** The backend request for the client's body, or a GatewayError (`invalid_request`, 400) when it cannot be translated. */
  toChat(body: Json, stream: boolean): ChatRequest | GatewayError;
  /** A whole 2xx backend answer (parsed JSON) as the dialect's answer. */
  fromChat(chat: Json, ctx: AnswerContext): Json;
  /** A backend error answer (status ≥ 400, its body as received, maybe not JSON) in the dialect's error shape. */
  errorFromChat(status: number, body: string): Json;
  /** A transducer for one streamed answer (dialects that stream). */
  stream?(ctx: AnswerContext): StreamTranslator;
}

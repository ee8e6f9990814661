import type { AnswerContext, Json } from '../dialect-codec';
import { newId } from './ids';
import { arr, count, isObj, obj, Obj, parseObject, str } from './shape';

/** Whether the client asked for thinking: only then does backend reasoning become a `thinking` block. */
export function wantsThinking(request: Json): boolean {
  const type = obj(request.thinking)?.type;
  return type === 'enabled' || type === 'adaptive';
}

/** The request's stop sequences (the strings a `stop_sequence` stop can name). */
export function stopSequences(request: Json): string[] {
  return arr(request.stop_sequences)?.filter((s): s is string => typeof s === 'string' && s !== '') ?? [];
}

export interface StopEvidence {
  finishReason: unknown;
  /** What the backend said stopped it: vLLM's `choices[].stop_reason`, llama-server's `stopping_word`. */
  reported: unknown[];
  /** The end of the generated text (a backend that keeps the stop string leaves it there). */
  textTail: string;
  hasToolCalls: boolean;
}

/** Anthropic's `stop_reason` and `stop_sequence` for a chat `finish_reason`. */
export function stopOf(evidence: StopEvidence, stops: string[]): { stop_reason: string; stop_sequence: string | null } {
  const reason = evidence.finishReason;
  if (reason === 'length') return { stop_reason: 'max_tokens', stop_sequence: null };
  if (reason === 'tool_calls' || reason === 'function_call' || evidence.hasToolCalls) return { stop_reason: 'tool_use', stop_sequence: null };
  if (reason === 'content_filter') return { stop_reason: 'refusal', stop_sequence: null };
  const named = evidence.reported.find((r): r is string => typeof r === 'string' && stops.includes(r));
  const ended = named ?? stops.find((s) => evidence.textTail.endsWith(s));
  return ended !== undefined ? { stop_reason: 'stop_sequence', stop_sequence: ended } : { stop_reason: 'end_turn', stop_sequence: null };
}

/** The longest tail worth keeping to see whether the text ended on a stop sequence. */
export function tailLength(stops: string[]): number {
  return stops.reduce((max, s) => Math.max(max, s.length), 0);
}

/** Anthropic usage from chat usage (0 where the backend reported none). */
export function usageOf(usage: unknown): Obj {
  const u = obj(usage);
  return {
    input_tokens: count(u?.prompt_tokens),
    output_tokens: count(u?.completion_tokens),
    cache_creation_input_tokens: 0,
    cache_read_input_tokens: 0,
  };
}

/** Backend reasoning text: `reasoning_content` (llama-server, DeepSeek, older vLLM) or `reasoning` (newer vLLM). */
export function reasoningOf(message: Obj | undefined): string | undefined {
  return str(message?.reasoning_content) ?? str(message?.reasoning);
}

/** The text of a chat message's content (a string, or text parts). */
function textOf(content: unknown): string {
  if (typeof content === 'string') return content;
  return (arr(content) ?? []).map((p) => (isObj(p) && typeof p.text === 'string' ? p.text : '')).join('');
}

/** A tool call as a `tool_use` block: the backend's id kept, `input` the arguments when they are a JSON object, else `{}`. */
function toolUse(call: unknown): Obj | undefined {
  if (!isObj(call)) return undefined;
  const fn = obj(call.function);
  const name = str(fn?.name);
  if (!name) return undefined;
  const args = fn?.arguments;
  const input = typeof args === 'string' ? (parseObject(args) ?? {}) : (obj(args) ?? {});
  return { type: 'tool_use', id: str(call.id) || newId('toolu'), name, input };
}

/** A whole chat-completions answer as an Anthropic Message. */
export function chatToMessage(chat: Json, ctx: AnswerContext): Json {
  const choice = obj(arr(chat.choices)?.[0]);
  const message = obj(choice?.message);
  const content: Obj[] = [];
  const reasoning = reasoningOf(message);
  if (reasoning && wantsThinking(ctx.request)) content.push({ type: 'thinking', thinking: reasoning, signature: '' });
  const text = textOf(message?.content);
  if (text !== '') content.push({ type: 'text', text });
  for (const call of arr(message?.tool_calls) ?? []) {
    const block = toolUse(call);
    if (block) content.push(block);
  }
  const stops = stopSequences(ctx.request);
  const stop = stopOf(
    {
      finishReason: choice?.finish_reason,
      reported: [choice?.stop_reason, choice?.stopping_word, chat.stopping_word],
      textTail: text,
      hasToolCalls: content.some((b) => b.type === 'tool_use'),
    },
    stops,
  );
  return { id: newId('msg'), type: 'message', role: 'assistant', model: ctx.model, content, ...stop, usage: usageOf(chat.usage) };
}

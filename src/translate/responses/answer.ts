import type { AnswerContext, Json } from '../dialect-codec';
import { customInput, flatToolsOf } from './request-tools';
import { CodecSources, count, isRecord, num, str } from './shapes';

export type ResponseStatus = 'completed' | 'incomplete' | 'failed' | 'in_progress';

/** How a response ended, from chat's `finish_reason`. */
export interface Ending {
  status: ResponseStatus;
  incompleteReason?: 'max_output_tokens' | 'content_filter';
  error?: { code: string; message: string };
}

export function endingOf(finishReason: unknown): Ending {
  if (finishReason === 'length') return { status: 'incomplete', incompleteReason: 'max_output_tokens' };
  if (finishReason === 'content_filter') return { status: 'incomplete', incompleteReason: 'content_filter' };
  return { status: 'completed' };
}

/** Chat's usage in the Responses shape (cached and reasoning counts are 0 when the backend gives none). */
export function usageOf(raw: unknown): Json | undefined {
  if (!isRecord(raw)) return undefined;
  const input = count(raw.prompt_tokens);
  const output = count(raw.completion_tokens);
  const total = num(raw.total_tokens);
  return {
    input_tokens: input,
    input_tokens_details: { cached_tokens: isRecord(raw.prompt_tokens_details) ? count(raw.prompt_tokens_details.cached_tokens) : 0 },
    output_tokens: output,
    output_tokens_details: { reasoning_tokens: isRecord(raw.completion_tokens_details) ? count(raw.completion_tokens_details.reasoning_tokens) : 0 },
    total_tokens: total !== undefined && total >= 0 ? Math.floor(total) : input + output,
  };
}

export interface Envelope {
  id: string;
  createdAt: number;
  ending: Ending;
  output: Json[];
  usage?: Json;
}

/** The `response` object: the answer's parts, and the client's settings echoed as the Responses API does. */
export function responseObject(e: Envelope, ctx: AnswerContext): Json {
  const req = ctx.request;
  const reasoning = isRecord(req.reasoning) ? req.reasoning : {};
  const response: Json = {
    id: e.id,
    object: 'response',
    created_at: e.createdAt,
    status: e.ending.status,
    background: false,
    error: e.ending.error ?? null,
    incomplete_details: e.ending.incompleteReason ? { reason: e.ending.incompleteReason } : null,
    instructions: typeof req.instructions === 'string' ? req.instructions : null,
    max_output_tokens: num(req.max_output_tokens) ?? null,
    model: ctx.model,
    output: e.output,
    parallel_tool_calls: typeof req.parallel_tool_calls === 'boolean' ? req.parallel_tool_calls : true,
    previous_response_id: null,
    reasoning: { effort: str(reasoning.effort) ?? null, summary: str(reasoning.summary) ?? null },
    store: false,
    temperature: num(req.temperature) ?? null,
    text: isRecord(req.text) ? req.text : { format: { type: 'text' } },
    tool_choice: req.tool_choice ?? 'auto',
    tools: Array.isArray(req.tools) ? req.tools : [],
    top_p: num(req.top_p) ?? null,
    truncation: req.truncation === 'auto' ? 'auto' : 'disabled',
    metadata: isRecord(req.metadata) ? req.metadata : {},
  };
  if (e.usage) response.usage = e.usage;
  if (typeof req.user === 'string') response.user = req.user;
  if (typeof req.safety_identifier === 'string') response.safety_identifier = req.safety_identifier;
  if (typeof req.prompt_cache_key === 'string') response.prompt_cache_key = req.prompt_cache_key;
  return response;
}

/** Output item builders, shared by whole answers and the stream (which sends the same items at `output_item.done`). */
export const Items = {
  reasoning: (id: string, text: string): Json => ({ id, type: 'reasoning', summary: text === '' ? [] : [{ type: 'summary_text', text }] }),
  textPart: (text: string): Json => ({ type: 'output_text', text, annotations: [], logprobs: [] }),
  message: (id: string, status: string, parts: Json[]): Json => ({ id, type: 'message', status, role: 'assistant', content: parts }),
  call(id: string, callId: string, name: string, args: string, status: string, namespace: string | undefined): Json {
    const item: Json = { id, type: 'function_call', status, arguments: args, call_id: callId, name };
    if (namespace !== undefined) item.namespace = namespace;
    return item;
  },
  customCall(id: string, callId: string, name: string, input: string, status: string, namespace: string | undefined): Json {
    const item: Json = { id, type: 'custom_tool_call', status, call_id: callId, name, input };
    if (namespace !== undefined) item.namespace = namespace;
    return item;
  },
};

/** The reasoning text a chat backend gave (vLLM's reasoning parsers: `reasoning_content`, newer `reasoning`). */
export function reasoningText(message: Json): string | undefined {
  return str(message.reasoning_content) ?? str(message.reasoning);
}

/** Chat message content as text: a string, or the texts of an array of parts. */
function contentText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content.map((p) => (isRecord(p) && typeof p.text === 'string' ? p.text : '')).join('');
}

/** A whole chat completion as a Responses `response` object. */
export function fromChatAnswer(chat: Json, ctx: AnswerContext, sources: CodecSources): Json {
  const createdAt = num(chat.created) ?? sources.nowSecs();
  const id = sources.newId('resp_');
  const choice = Array.isArray(chat.choices) && isRecord(chat.choices[0]) ? chat.choices[0] : undefined;
  const message = choice && isRecord(choice.message) ? choice.message : undefined;
  if (!message) {
    const error = { code: 'server_error', message: 'The backend answered without a message (no choices[0].message in its chat completion)' };
    return responseObject({ id, createdAt, ending: { status: 'failed', error }, output: [], usage: usageOf(chat.usage) }, ctx);
  }
  const ending = endingOf(choice?.finish_reason);
  const itemStatus = ending.status === 'incomplete' ? 'incomplete' : 'completed';
  const output: Json[] = [];
  const reasoning = reasoningText(message);
  if (reasoning) output.push(Items.reasoning(sources.newId('rs_'), reasoning));
  // A refusal (OpenAI's own models only) is shown as the answer's text: chat backends here never send one.
  const text = contentText(message.content) + (str(message.refusal) ?? '');
  if (text !== '') output.push(Items.message(sources.newId('msg_'), itemStatus, [Items.textPart(text)]));
  const { namespaces, custom } = flatToolsOf(ctx.request);
  for (const call of Array.isArray(message.tool_calls) ? message.tool_calls : []) {
    if (!isRecord(call)) continue;
    const fn = isRecord(call.function) ? call.function : {};
    const name = str(fn.name) ?? '';
    const args = typeof fn.arguments === 'string' ? fn.arguments : isRecord(fn.arguments) ? JSON.stringify(fn.arguments) : '';
    if (custom.has(name)) {
      output.push(Items.customCall(sources.newId('ctc_'), str(call.id) || sources.newId('call_'), name, customInput(args), 'completed', namespaces.get(name)));
      continue;
    }
    output.push(Items.call(sources.newId('fc_'), str(call.id) || sources.newId('call_'), name, args, 'completed', namespaces.get(name)));
  }
  return responseObject({ id, createdAt, ending, output, usage: usageOf(chat.usage) }, ctx);
}

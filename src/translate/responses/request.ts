import { Errors, GatewayError } from '../../common/gateway-error';
import type { ChatRequest, Json } from '../dialect-codec';
import { placeSystemMessages } from '../system-messages';
import { InputMapper } from './request-input';
import { flattenTools, toolChoiceOf } from './request-tools';
import { isRecord } from './shapes';

export const PREVIOUS_RESPONSE_UNSUPPORTED =
  'previous_response_id is not supported: this gateway does not store responses; send the full conversation in input';

/** Fields read by the translation below; any other field is dropped (and named in `dropped`). */
const HANDLED = new Set([
  'model',
  'input',
  'instructions',
  'tools',
  'tool_choice',
  'parallel_tool_calls',
  'max_output_tokens',
  'temperature',
  'top_p',
  'text',
  'reasoning',
  'user',
  'safety_identifier',
  'stream',
  'previous_response_id',
  'conversation',
  'prompt',
  'background',
]);

/** `store: false` asks for what this gateway does anyway (it keeps no responses): nothing is dropped. */
const QUIET_WHEN_FALSE = new Set(['store']);

/**
 * A Responses request as a chat-completions request (the table in docs/agents.md). Fields that need
 * state this gateway does not keep (a stored response, conversation or prompt) are refused with a 400
 * naming them, rather than answered as if the conversation had started over.
 */
export function toChatRequest(body: Json, stream: boolean): ChatRequest | GatewayError {
  const refused = refuseStateful(body);
  if (refused) return refused;
  const dropped = new Set<string>();
  for (const key of Object.keys(body)) {
    if (HANDLED.has(key)) continue;
    if (QUIET_WHEN_FALSE.has(key) && (body[key] === false || body[key] === null)) continue;
    dropped.add(key.slice(0, 64));
  }

  const input = new InputMapper(dropped);
  const failed = input.addInstructions(body.instructions) ?? (body.input === undefined ? undefined : input.addInput(body.input));
  if (failed) return failed;
  if (input.messages.length === 0) return Errors.invalidRequest('input is required: send the conversation as a string or an array of input items', 'input');

  // `instructions` and `developer` items are system messages: placed where chat templates accept them.
  const chat: Json = { model: body.model, messages: placeSystemMessages(input.messages) };
  if (stream) {
    chat.stream = true;
    // The final `response.completed` carries usage: chat sends it only when asked.
    chat.stream_options = { include_usage: true };
  }
  const tools = flattenTools(body.tools, dropped);
  if (tools instanceof GatewayError) return tools;
  if (tools.tools.length > 0) {
    chat.tools = tools.tools;
    const choice = toolChoiceOf(body.tool_choice, dropped);
    if (choice !== undefined) chat.tool_choice = choice;
    if (typeof body.parallel_tool_calls === 'boolean') chat.parallel_tool_calls = body.parallel_tool_calls;
  } else if (body.tool_choice != null && body.tool_choice !== 'auto' && body.tool_choice !== 'none') {
    // Chat backends refuse a tool_choice without tools (all of them were hosted tools, left out).
    dropped.add('tool_choice (no function tools left)');
  }

  const numbers = copyNumbers(body, chat);
  if (numbers) return numbers;
  const format = responseFormatOf(body.text, dropped);
  if (format instanceof GatewayError) return format;
  if (format) chat.response_format = format;
  if (isRecord(body.reasoning)) {
    reasoningEffort(body.reasoning.effort, chat, dropped);
    for (const key of Object.keys(body.reasoning)) if (key !== 'effort' && body.reasoning[key] != null) dropped.add(`reasoning.${key.slice(0, 64)}`);
  }
  const user = typeof body.user === 'string' ? body.user : typeof body.safety_identifier === 'string' ? body.safety_identifier : undefined;
  if (user !== undefined) chat.user = user;
  return { body: chat, dropped: [...dropped] };
}

/**
 * Chat backends take `reasoning_effort` low, medium or high only (vLLM's request model refuses any other
 * value, failing the whole turn), while Codex also sends `minimal`, `xhigh` and `none`: the nearest level
 * is sent instead. `none` asks for no reasoning, which reasoning templates (Qwen3, DeepSeek, GLM) read
 * as `enable_thinking: false`.
 */
const EFFORTS: Record<string, string> = { minimal: 'low', low: 'low', medium: 'medium', high: 'high', xhigh: 'high' };

function reasoningEffort(effort: unknown, chat: Json, dropped: Set<string>): void {
  if (effort === undefined || effort === null) return;
  if (effort === 'none') chat.chat_template_kwargs = { enable_thinking: false };
  else if (typeof effort === 'string' && Object.hasOwn(EFFORTS, effort)) chat.reasoning_effort = EFFORTS[effort];
  else dropped.add(`reasoning.effort (${typeof effort === 'string' ? effort.slice(0, 64) : typeof effort})`);
}

function refuseStateful(body: Json): GatewayError | undefined {
  if (body.previous_response_id != null && body.previous_response_id !== '') {
    return Errors.invalidRequest(PREVIOUS_RESPONSE_UNSUPPORTED, 'previous_response_id');
  }
  if (body.conversation != null) {
    return Errors.invalidRequest(
      'conversation is not supported: this gateway does not store conversations; send the full conversation in input',
      'conversation',
    );
  }
  if (body.prompt != null) {
    return Errors.invalidRequest('prompt is not supported: this gateway stores no prompt templates; send instructions and input instead', 'prompt');
  }
  if (body.background === true) {
    return Errors.invalidRequest('background is not supported: this gateway does not store responses to fetch later', 'background');
  }
  return undefined;
}

const NUMBERS: Array<[from: string, to: string]> = [
  ['max_output_tokens', 'max_tokens'],
  ['temperature', 'temperature'],
  ['top_p', 'top_p'],
];

function copyNumbers(body: Json, chat: Json): GatewayError | undefined {
  for (const [from, to] of NUMBERS) {
    const value = body[from];
    if (value === undefined || value === null) continue;
    if (typeof value !== 'number' || !Number.isFinite(value)) return Errors.invalidRequest(`${from} must be a number`, from);
    chat[to] = value;
  }
  return undefined;
}

/** `text.format` as chat's `response_format` (`text` is chat's default, so nothing is sent for it). */
function responseFormatOf(text: unknown, dropped: Set<string>): Json | GatewayError | undefined {
  if (text === undefined || text === null) return undefined;
  if (!isRecord(text)) return Errors.invalidRequest('text must be an object', 'text');
  for (const key of Object.keys(text)) if (key !== 'format' && text[key] != null) dropped.add(`text.${key.slice(0, 64)}`);
  const format = text.format;
  if (format === undefined || format === null) return undefined;
  if (!isRecord(format)) return Errors.invalidRequest('text.format must be an object', 'text.format');
  if (format.type === 'text') return undefined;
  if (format.type === 'json_object') return { type: 'json_object' };
  if (format.type === 'json_schema') {
    if (typeof format.name !== 'string' || !isRecord(format.schema)) {
      return Errors.invalidRequest('text.format of type json_schema needs a name (string) and a schema (object)', 'text.format');
    }
    const schema: Json = { name: format.name, schema: format.schema };
    if (typeof format.strict === 'boolean') schema.strict = format.strict;
    if (typeof format.description === 'string') schema.description = format.description;
    return { type: 'json_schema', json_schema: schema };
  }
  return Errors.invalidRequest('text.format.type must be text, json_object or json_schema', 'text.format.type');
}

import { Errors, GatewayError } from '../../common/gateway-error';
import type { ChatRequest, Json } from '../dialect-codec';
import { chatMessages } from './anthropic-messages';
import { arr, isObj, num, obj, Obj, str } from './shape';

/** Top-level fields this module maps (or deliberately ignores); any other field is reported in `dropped`. */
const HANDLED = new Set([
  'model',
  'messages',
  'system',
  'max_tokens',
  'stop_sequences',
  'temperature',
  'top_p',
  'top_k',
  'metadata',
  'stream',
  'tools',
  'tool_choice',
  'thinking',
  'output_config',
]);

interface Sink {
  dropped: Set<string>;
}

/**
 * Custom tools (no `type`, or `type: "custom"`, with an `input_schema`) become function tools.
 * Anthropic's own tools (`web_search_*`, `bash_*`, `text_editor_*`, ...) run on Anthropic's side or
 * need its special handling: a chat backend cannot run them, so they are left out.
 */
function chatTools(tools: unknown, sink: Sink): Obj[] | undefined {
  const list = arr(tools);
  if (!list) {
    if (tools !== undefined) sink.dropped.add('tools (not an array)');
    return undefined;
  }
  const out: Obj[] = [];
  list.forEach((tool, i) => {
    const name = isObj(tool) ? str(tool.name) : undefined;
    const custom = isObj(tool) && (tool.type === undefined || tool.type === null || tool.type === 'custom') && isObj(tool.input_schema);
    if (!custom || !name) {
      sink.dropped.add(`tools.${i} (${isObj(tool) ? String(tool.type ?? name ?? 'no name') : 'not an object'}: not a custom tool)`);
      return;
    }
    const fn: Obj = { name, parameters: tool.input_schema };
    if (typeof tool.description === 'string') fn.description = tool.description;
    for (const key of ['defer_loading', 'cache_control', 'input_examples', 'eager_input_streaming', 'strict', 'allowed_callers']) {
      if (tool[key] !== undefined) sink.dropped.add(`tools[].${key}`);
    }
    out.push({ type: 'function', function: fn });
  });
  return out.length > 0 ? out : undefined;
}

/** `auto` → `auto`, `any` → `required`, `tool` → that function, `none` → `none`; parallel use off when asked. */
function toolChoice(choice: unknown, body: Obj, sink: Sink): void {
  const c = obj(choice);
  if (!c) {
    if (choice !== undefined) sink.dropped.add('tool_choice (not an object)');
    return;
  }
  if (c.type === 'auto') body.tool_choice = 'auto';
  else if (c.type === 'any') body.tool_choice = 'required';
  else if (c.type === 'none') body.tool_choice = 'none';
  else if (c.type === 'tool' && typeof c.name === 'string') body.tool_choice = { type: 'function', function: { name: c.name } };
  else sink.dropped.add(`tool_choice ${String(c.type)}`);
  if (c.disable_parallel_tool_use === true) body.parallel_tool_calls = false;
}

/** The `reasoning_effort` a thinking budget asks for (chat backends take an effort level, not a budget). */
function effortOfBudget(budget: number): string {
  if (budget < 4096) return 'low';
  if (budget < 16384) return 'medium';
  return 'high';
}

const EFFORTS: Record<string, string> = { low: 'low', medium: 'medium', high: 'high', xhigh: 'high', max: 'high' };

/**
 * `thinking` as the switches reasoning backends read: `chat_template_kwargs.enable_thinking` (Qwen3,
 * DeepSeek, GLM templates on llama-server and vLLM) and `reasoning_effort`. Backends without them
 * ignore both, so thinking is never an error.
 */
function thinking(request: Obj, body: Obj, sink: Sink): void {
  const t = obj(request.thinking);
  const effort = str(obj(request.output_config)?.effort);
  if (t?.type === 'enabled') {
    body.chat_template_kwargs = { enable_thinking: true };
    const budget = num(t.budget_tokens);
    if (budget !== undefined) body.reasoning_effort = effortOfBudget(budget);
    else if (effort && EFFORTS[effort]) body.reasoning_effort = EFFORTS[effort];
  } else if (t?.type === 'adaptive') {
    body.chat_template_kwargs = { enable_thinking: true };
    if (effort && EFFORTS[effort]) body.reasoning_effort = EFFORTS[effort];
  } else if (t?.type === 'disabled' || request.thinking === undefined || request.thinking === null) {
    // No `thinking` means none on Anthropic's side; Qwen3-style templates think unless told not to, and
    // that hidden reasoning would spend the client's `max_tokens`. Templates without the key ignore it.
    body.chat_template_kwargs = { enable_thinking: false };
  } else if (request.thinking !== undefined) sink.dropped.add(`thinking ${String(t?.type ?? '(not an object)')}`);
  if (effort && body.reasoning_effort === undefined) sink.dropped.add('output_config.effort (thinking not enabled)');
}

/** `output_config.format` (a JSON schema for the answer) is chat's `response_format`. */
function outputFormat(request: Obj, body: Obj, sink: Sink): void {
  const config = obj(request.output_config);
  if (!config) {
    if (request.output_config !== undefined) sink.dropped.add('output_config (not an object)');
    return;
  }
  const format = obj(config.format);
  if (format?.type === 'json_schema' && isObj(format.schema)) {
    body.response_format = { type: 'json_schema', json_schema: { name: 'output', schema: format.schema } };
  } else if (config.format !== undefined && config.format !== null) sink.dropped.add('output_config.format');
  for (const key of Object.keys(config)) if (key !== 'format' && key !== 'effort') sink.dropped.add(`output_config.${key}`);
}

/** Sampling fields copied when they are numbers (`top_k`: llama-server and vLLM both take it). */
function sampling(request: Obj, body: Obj, sink: Sink): void {
  const maxTokens = num(request.max_tokens);
  if (maxTokens !== undefined) body.max_tokens = maxTokens;
  for (const key of ['temperature', 'top_p', 'top_k']) {
    const value = num(request[key]);
    if (value !== undefined) body[key] = value;
    else if (request[key] !== undefined && request[key] !== null) sink.dropped.add(`${key} (not a number)`);
  }
  const stops = arr(request.stop_sequences)?.filter((s): s is string => typeof s === 'string' && s !== '');
  if (stops && stops.length > 0) body.stop = stops;
  const user = str(obj(request.metadata)?.user_id);
  if (user) body.user = user;
}

/** The chat-completions request for an Anthropic Messages body. */
export function messagesToChat(request: Json, stream: boolean): ChatRequest | GatewayError {
  if (!isObj(request)) return Errors.invalidRequest('body: must be a JSON object');
  const sink: Sink = { dropped: new Set() };
  const messages = chatMessages(request.system, request.messages, sink);
  if (messages instanceof GatewayError) return messages;
  const body: Obj = { model: request.model, messages };
  sampling(request, body, sink);
  const tools = chatTools(request.tools, sink);
  if (tools) {
    body.tools = tools;
    toolChoice(request.tool_choice, body, sink);
  } else if (request.tool_choice !== undefined) sink.dropped.add('tool_choice (no function tools)');
  thinking(request, body, sink);
  outputFormat(request, body, sink);
  if (stream) {
    body.stream = true;
    body.stream_options = { include_usage: true };
  }
  for (const key of Object.keys(request)) if (!HANDLED.has(key)) sink.dropped.add(key);
  return { body, dropped: [...sink.dropped] };
}

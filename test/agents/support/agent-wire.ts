import type { FunctionTurn, Turn } from './agent-turns';

/**
 * A turn as each dialect's whole answer and SSE stream, shaped like the real APIs send them
 * (the CLIs parse these; a missing field the real API always sends can break an agent).
 * Tool arguments are streamed in two pieces, as real servers cut them anywhere.
 */

const USAGE = { prompt: 42, completion: 9 };

const sse = (events: unknown[]): string => events.map((e) => `data: ${JSON.stringify(e)}\n\n`).join('');
const named = (events: Array<{ type: string; [field: string]: unknown }>): string =>
  events.map((e) => `event: ${e.type}\ndata: ${JSON.stringify(e)}\n\n`).join('');

function halves(text: string): [string, string] {
  const mid = Math.ceil(text.length / 2);
  return [text.slice(0, mid), text.slice(mid)];
}

// ---- chat completions ----

export function chatJson(turn: FunctionTurn, model: string): unknown {
  const message =
    turn.kind === 'tool'
      ? {
          role: 'assistant',
          content: null,
          tool_calls: [{ id: 'call_agents_1', type: 'function', function: { name: turn.name, arguments: JSON.stringify(turn.args) } }],
        }
      : { role: 'assistant', content: turn.text };
  return {
    id: 'chatcmpl-agents',
    object: 'chat.completion',
    created: 1,
    model,
    choices: [{ index: 0, message, finish_reason: turn.kind === 'tool' ? 'tool_calls' : 'stop' }],
    usage: { prompt_tokens: USAGE.prompt, completion_tokens: USAGE.completion, total_tokens: USAGE.prompt + USAGE.completion },
  };
}

export function chatSse(turn: FunctionTurn, model: string): string {
  const chunk = (delta: unknown, finish: string | null = null) => ({
    id: 'chatcmpl-agents',
    object: 'chat.completion.chunk',
    created: 1,
    model,
    choices: [{ index: 0, delta, finish_reason: finish }],
  });
  const events: unknown[] = [];
  if (turn.kind === 'tool') {
    const [a, b] = halves(JSON.stringify(turn.args));
    events.push(
      chunk({
        role: 'assistant',
        content: null,
        tool_calls: [{ index: 0, id: 'call_agents_1', type: 'function', function: { name: turn.name, arguments: '' } }],
      }),
      chunk({ tool_calls: [{ index: 0, function: { arguments: a } }] }),
      chunk({ tool_calls: [{ index: 0, function: { arguments: b } }] }),
      chunk({}, 'tool_calls'),
    );
  } else {
    const [a, b] = halves(turn.text);
    events.push(chunk({ role: 'assistant', content: '' }), chunk({ content: a }), chunk({ content: b }), chunk({}, 'stop'));
  }
  events.push({
    id: 'chatcmpl-agents',
    object: 'chat.completion.chunk',
    created: 1,
    model,
    choices: [],
    usage: { prompt_tokens: USAGE.prompt, completion_tokens: USAGE.completion, total_tokens: USAGE.prompt + USAGE.completion },
  });
  return sse(events) + 'data: [DONE]\n\n';
}

// ---- Anthropic Messages ----

function messagesBlock(turn: FunctionTurn): Record<string, unknown> {
  return turn.kind === 'tool' ? { type: 'tool_use', id: 'toolu_agents_1', name: turn.name, input: turn.args } : { type: 'text', text: turn.text };
}

export function messagesJson(turn: FunctionTurn, model: string): unknown {
  return {
    id: 'msg_agents',
    type: 'message',
    role: 'assistant',
    model,
    content: [messagesBlock(turn)],
    stop_reason: turn.kind === 'tool' ? 'tool_use' : 'end_turn',
    stop_sequence: null,
    usage: { input_tokens: USAGE.prompt, output_tokens: USAGE.completion },
  };
}

export function messagesSse(turn: FunctionTurn, model: string): string {
  const start = turn.kind === 'tool' ? { type: 'tool_use', id: 'toolu_agents_1', name: turn.name, input: {} } : { type: 'text', text: '' };
  const [a, b] = halves(turn.kind === 'tool' ? JSON.stringify(turn.args) : turn.text);
  const delta = (piece: string) => (turn.kind === 'tool' ? { type: 'input_json_delta', partial_json: piece } : { type: 'text_delta', text: piece });
  return named([
    {
      type: 'message_start',
      message: {
        id: 'msg_agents',
        type: 'message',
        role: 'assistant',
        model,
        content: [],
        stop_reason: null,
        stop_sequence: null,
        usage: { input_tokens: USAGE.prompt, output_tokens: 1 },
      },
    },
    { type: 'content_block_start', index: 0, content_block: start },
    { type: 'content_block_delta', index: 0, delta: delta(a) },
    { type: 'content_block_delta', index: 0, delta: delta(b) },
    { type: 'content_block_stop', index: 0 },
    {
      type: 'message_delta',
      delta: { stop_reason: turn.kind === 'tool' ? 'tool_use' : 'end_turn', stop_sequence: null },
      usage: { output_tokens: USAGE.completion },
    },
    { type: 'message_stop' },
  ]);
}

// ---- Responses ----

function responsesItem(turn: Turn): Record<string, unknown> {
  if (turn.kind === 'custom-tool')
    return { type: 'custom_tool_call', id: 'ctc_agents_1', call_id: 'call_agents_1', name: turn.name, input: turn.input, status: 'completed' };
  return turn.kind === 'tool'
    ? { type: 'function_call', id: 'fc_agents_1', call_id: 'call_agents_1', name: turn.name, arguments: JSON.stringify(turn.args), status: 'completed' }
    : { type: 'message', id: 'msg_agents_1', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: turn.text, annotations: [] }] };
}

function responseObject(turn: Turn, model: string, status: 'in_progress' | 'completed'): Record<string, unknown> {
  return {
    id: 'resp_agents',
    object: 'response',
    created_at: 1,
    status,
    model,
    output: status === 'completed' ? [responsesItem(turn)] : [],
    usage:
      status === 'completed'
        ? {
            input_tokens: USAGE.prompt,
            input_tokens_details: { cached_tokens: 0 },
            output_tokens: USAGE.completion,
            output_tokens_details: { reasoning_tokens: 0 },
            total_tokens: USAGE.prompt + USAGE.completion,
          }
        : null,
  };
}

export function responsesJson(turn: Turn, model: string): unknown {
  return responseObject(turn, model, 'completed');
}

export function responsesSse(turn: Turn, model: string): string {
  const item = responsesItem(turn);
  const events: Array<Record<string, unknown> & { type: string }> = [{ type: 'response.created', response: responseObject(turn, model, 'in_progress') }];
  if (turn.kind === 'tool') {
    const [a, b] = halves(String(item.arguments));
    events.push(
      { type: 'response.output_item.added', output_index: 0, item: { ...item, arguments: '', status: 'in_progress' } },
      { type: 'response.function_call_arguments.delta', item_id: item.id, output_index: 0, delta: a },
      { type: 'response.function_call_arguments.delta', item_id: item.id, output_index: 0, delta: b },
      { type: 'response.function_call_arguments.done', item_id: item.id, output_index: 0, arguments: item.arguments },
    );
  } else if (turn.kind === 'custom-tool') {
    events.push(
      { type: 'response.output_item.added', output_index: 0, item: { ...item, input: '', status: 'in_progress' } },
      { type: 'response.custom_tool_call_input.delta', item_id: item.id, output_index: 0, delta: turn.input },
      { type: 'response.custom_tool_call_input.done', item_id: item.id, output_index: 0, input: turn.input },
    );
  } else {
    const [a, b] = halves(turn.text);
    const part = { item_id: item.id, output_index: 0, content_index: 0 };
    events.push(
      { type: 'response.output_item.added', output_index: 0, item: { ...item, content: [], status: 'in_progress' } },
      { type: 'response.content_part.added', ...part, part: { type: 'output_text', text: '', annotations: [] } },
      { type: 'response.output_text.delta', ...part, delta: a },
      { type: 'response.output_text.delta', ...part, delta: b },
      { type: 'response.output_text.done', ...part, text: turn.text },
      { type: 'response.content_part.done', ...part, part: { type: 'output_text', text: turn.text, annotations: [] } },
    );
  }
  events.push({ type: 'response.output_item.done', output_index: 0, item }, { type: 'response.completed', response: responseObject(turn, model, 'completed') });
  return named(events.map((e, i) => ({ ...e, sequence_number: i })));
}

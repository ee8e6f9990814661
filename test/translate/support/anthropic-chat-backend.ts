import type { Behaviour } from '../../worker/support/fake-backend';

/**
 * Scripted chat-completions answers for the fake backend: what a llama-server or vLLM would send
 * for a given turn (whole JSON, or SSE written in pieces as real servers flush them).
 */

export interface ChatUsage {
  prompt: number;
  completion: number;
}

export interface ToolCall {
  id?: string;
  name: string;
  arguments: string;
}

export interface ChatTurn {
  content?: string;
  reasoning?: string;
  toolCalls?: ToolCall[];
  finish: 'stop' | 'length' | 'tool_calls';
  usage?: ChatUsage;
  /** Extra fields of the choice (vLLM's `stop_reason`, llama-server's `stopping_word`). */
  choiceExtra?: Record<string, unknown>;
}

const USAGE: ChatUsage = { prompt: 21, completion: 9 };

function usageOf(u: ChatUsage = USAGE): Record<string, number> {
  return { prompt_tokens: u.prompt, completion_tokens: u.completion, total_tokens: u.prompt + u.completion };
}

/** A whole `chat.completion` answer for this turn, as the fake backend's next reply. */
export function chatAnswer(turn: ChatTurn): Behaviour {
  const message: Record<string, unknown> = { role: 'assistant', content: turn.content ?? null };
  if (turn.reasoning) message.reasoning_content = turn.reasoning;
  if (turn.toolCalls) {
    message.tool_calls = turn.toolCalls.map((c, i) => ({ id: c.id ?? `call_${i}`, type: 'function', function: { name: c.name, arguments: c.arguments } }));
  }
  const body = {
    id: 'chatcmpl-e2e',
    object: 'chat.completion',
    created: 1,
    model: 'served-model',
    choices: [{ index: 0, message, finish_reason: turn.finish, ...turn.choiceExtra }],
    usage: usageOf(turn.usage),
  };
  return { kind: 'status', status: 200, body: JSON.stringify(body) };
}

/**
 * The same turn streamed: text word by word, each tool call's arguments in small pieces (llama-server's
 * style: id and name first, then argument text), then the finish chunk, the usage chunk and `[DONE]`.
 * Written a few bytes at a time so events and UTF-8 characters are cut across network writes.
 */
export function chatStream(turn: ChatTurn, pieceBytes = 7): Behaviour {
  const base = { id: 'chatcmpl-e2e', object: 'chat.completion.chunk', created: 1, model: 'served-model' };
  const chunk = (delta: Record<string, unknown>, finish: string | null = null, extra: Record<string, unknown> = {}) => ({
    ...base,
    choices: [{ index: 0, delta, finish_reason: finish, ...extra }],
  });
  const chunks: unknown[] = [chunk({ role: 'assistant', content: '' })];
  for (const word of turn.reasoning?.match(/\S+\s*/g) ?? []) chunks.push(chunk({ reasoning_content: word }));
  for (const word of turn.content?.match(/\S+\s*|\s+/g) ?? []) chunks.push(chunk({ content: word }));
  (turn.toolCalls ?? []).forEach((call, index) => {
    chunks.push(chunk({ tool_calls: [{ index, id: call.id ?? `call_${index}`, type: 'function', function: { name: call.name, arguments: '' } }] }));
    for (let i = 0; i < call.arguments.length; i += 5) {
      chunks.push(chunk({ tool_calls: [{ index, function: { arguments: call.arguments.slice(i, i + 5) } }] }));
    }
  });
  chunks.push(chunk({}, turn.finish, turn.choiceExtra));
  chunks.push({ ...base, choices: [], usage: usageOf(turn.usage) });
  const text = chunks.map((c) => `data: ${JSON.stringify(c)}\n\n`).join('') + 'data: [DONE]\n\n';
  const bytes = Buffer.from(text, 'utf8');
  const pieces: Buffer[] = [];
  for (let i = 0; i < bytes.length; i += pieceBytes) pieces.push(bytes.subarray(i, i + pieceBytes));
  return { kind: 'raw-stream', pieces, delayMs: 0, then: 'end', headers: { 'cache-control': 'no-cache' } };
}

/** An error answer as an OpenAI-compatible backend sends it. */
export function chatError(status: number, message: string): Behaviour {
  return { kind: 'status', status, body: JSON.stringify({ error: { code: status, message, type: 'invalid_request_error' } }) };
}

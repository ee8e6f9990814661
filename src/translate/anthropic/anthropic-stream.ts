import type { AnswerContext, StreamTranslator } from '../dialect-codec';
import { HELD_TEXT_MESSAGE, MAX_HELD_TEXT, SSE_OVERFLOW_MESSAGE, SseLines } from '../sse-lines';
import { reasoningOf, stopOf, stopSequences, tailLength, usageOf, wantsThinking } from './anthropic-answer';
import { anthropicErrorType } from './anthropic-errors';
import { newId } from './ids';
import { arr, num, obj, Obj, parseObject, str } from './shape';

/** A tool call being received: its arguments are held until the answer ends. */
interface ToolCall {
  id?: string;
  name?: string;
  pieces: string[];
}

const TRUNCATED = 'The backend stream ended before the answer was complete';

function sse(type: string, payload: Obj): string {
  return `event: ${type}\ndata: ${JSON.stringify({ type, ...payload })}\n\n`;
}

/** A backend's in-stream error: `{error: ...}`, or vLLM's flat `{object: "error", message, code}`. */
function failureOf(chunk: Obj): { type: string; message: string } | undefined {
  const error = chunk.error !== undefined && chunk.error !== null ? chunk.error : chunk.object === 'error' ? chunk : undefined;
  if (error === undefined) return undefined;
  const e = obj(error);
  const status = num(e?.code) ?? 500;
  return { type: anthropicErrorType(status), message: str(e?.message) ?? str(error) ?? 'The backend failed while streaming' };
}

/**
 * A streamed chat-completions answer as Anthropic Messages events: `message_start`, `ping`, the
 * thinking and text blocks as they stream, then each tool call in its own block (in the order the
 * backend began them), `message_delta` with the stop reason and usage, `message_stop`.
 *
 * Every tool call stays open until the answer ends: backends may interleave the fragments of parallel
 * calls, and only at the end is it known whether a call's whole text is a JSON object. When it is, the
 * pieces go out as the backend streamed them (`input_json_delta`); otherwise a single `{}`, so the
 * client's concatenation always parses. Text that arrives after a call began streams on in its block,
 * which therefore comes before the tool blocks.
 */
export class AnthropicStream implements StreamTranslator {
  private readonly reader = new SseLines();
  private readonly thinking: boolean;
  private readonly stops: string[];
  private readonly tailMax: number;
  private started = false;
  private finished = false;
  private nextIndex = 0;
  private open: { kind: 'text' | 'thinking'; index: number } | null = null;
  private readonly tools = new Map<string, ToolCall>();
  private lastTool: string | undefined;
  private held = 0;
  private finishReason: unknown = null;
  private readonly reported: unknown[] = [];
  private tail = '';
  private usage: unknown;

  constructor(private readonly ctx: AnswerContext) {
    this.thinking = wantsThinking(ctx.request);
    this.stops = stopSequences(ctx.request);
    this.tailMax = tailLength(this.stops);
  }

  push(text: string): string {
    if (this.finished) return '';
    const out: string[] = [];
    const events = this.reader.push(typeof text === 'string' ? text : '');
    // Nothing is said before the backend's first event: a backend that answered with a JSON error
    // instead of SSE can still be answered as one whole error.
    if (events.length > 0 || this.reader.overflowed) this.start(out);
    this.read(events, out);
    return out.join('');
  }

  end(): string {
    if (this.finished) return '';
    const out: string[] = [];
    this.start(out);
    this.read(this.reader.end(), out);
    // A stream cut before any finish_reason is not a whole answer: say so rather than fake `end_turn`.
    if (!this.finished) this.endWith(out);
    return out.join('');
  }

  fail(error: { code: string; message: string; status: number }): string {
    if (this.finished) return '';
    const out: string[] = [];
    this.failWith(out, anthropicErrorType(num(error?.status) ?? 500), str(error?.message) ?? 'The gateway ended the stream');
    return out.join('');
  }

  private read(events: string[], out: string[]): void {
    for (const data of events) {
      if (this.finished) return;
      if (data.trim() === '[DONE]') this.endWith(out);
      else this.chunk(data, out);
    }
    if (!this.finished && this.reader.overflowed) this.failWith(out, 'api_error', SSE_OVERFLOW_MESSAGE);
  }

  /** `[DONE]` or the stream's end: a whole answer only when the backend gave its finish_reason. */
  private endWith(out: string[]): void {
    if (this.finishReason === null) this.failWith(out, 'api_error', TRUNCATED);
    else this.finish(out);
  }

  private start(out: string[]): void {
    if (this.started) return;
    this.started = true;
    const message = {
      id: newId('msg'),
      type: 'message',
      role: 'assistant',
      model: this.ctx.model,
      content: [],
      stop_reason: null,
      stop_sequence: null,
      usage: usageOf(undefined),
    };
    out.push(sse('message_start', { message }), sse('ping', {}));
  }

  private chunk(data: string, out: string[]): void {
    let chunk: Obj | undefined;
    try {
      chunk = obj(JSON.parse(data));
    } catch {
      return; // a backend's garbage never stops the stream
    }
    if (!chunk) return;
    const failure = failureOf(chunk);
    if (failure) return this.failWith(out, failure.type, failure.message);
    if (obj(chunk.usage)) this.usage = chunk.usage;
    this.report(chunk.stopping_word);
    const choice = obj(arr(chunk.choices)?.[0]);
    if (!choice) return;
    const delta = obj(choice.delta);
    const reasoning = reasoningOf(delta);
    if (reasoning && this.thinking) this.blockDelta('thinking', { type: 'thinking_delta', thinking: reasoning }, out);
    const content = str(delta?.content);
    if (content) {
      this.blockDelta('text', { type: 'text_delta', text: content }, out);
      if (this.tailMax > 0) this.tail = (this.tail + content).slice(-this.tailMax);
    }
    for (const fragment of arr(delta?.tool_calls) ?? []) this.toolFragment(obj(fragment));
    if (this.held > MAX_HELD_TEXT) return this.failWith(out, 'api_error', HELD_TEXT_MESSAGE);
    if (choice.finish_reason !== undefined && choice.finish_reason !== null) this.finishReason = choice.finish_reason;
    this.report(choice.stop_reason);
    this.report(choice.stopping_word);
  }

  /** Kept only when it is text: most chunks carry `null` here, and the list must not grow with them. */
  private report(value: unknown): void {
    if (typeof value === 'string' && value !== '' && this.reported.length < 16) this.reported.push(value);
  }

  /** A text or thinking delta, opening its block (and closing the one before) when the kind changes. */
  private blockDelta(kind: 'text' | 'thinking', delta: Obj, out: string[]): void {
    if (this.open?.kind !== kind) {
      this.closeOpen(out);
      const index = this.nextIndex++;
      const block = kind === 'text' ? { type: 'text', text: '' } : { type: 'thinking', thinking: '', signature: '' };
      out.push(sse('content_block_start', { index, content_block: block }));
      this.open = { kind, index };
    }
    out.push(sse('content_block_delta', { index: this.open.index, delta }));
  }

  /** Which call a fragment belongs to: its `index`, else its `id`, else the call last received. */
  private keyOf(fragment: Obj): string {
    const index = num(fragment.index);
    if (index !== undefined) return `#${index}`;
    const id = str(fragment.id);
    if (id) {
      const last = this.lastTool === undefined ? undefined : this.tools.get(this.lastTool);
      return last?.id === id ? (this.lastTool as string) : `id:${id}`;
    }
    return this.lastTool ?? '#0';
  }

  private toolFragment(fragment: Obj | undefined): void {
    if (!fragment) return;
    const key = this.keyOf(fragment);
    let tool = this.tools.get(key);
    if (!tool) this.tools.set(key, (tool = { pieces: [] }));
    this.lastTool = key;
    const fn = obj(fragment.function);
    tool.id ??= str(fragment.id) || undefined;
    const name = str(fn?.name);
    if (name && !tool.name) tool.name = name;
    const args = str(fn?.arguments);
    if (args) {
      tool.pieces.push(args);
      this.held += args.length;
    }
  }

  private closeOpen(out: string[]): void {
    if (!this.open) return;
    out.push(sse('content_block_stop', { index: this.open.index }));
    this.open = null;
  }

  /** Each call as one whole block (start, its argument pieces, stop), one after another. */
  private emitTools(out: string[]): void {
    for (const tool of this.tools.values()) {
      const index = this.nextIndex++;
      const block = { type: 'tool_use', id: tool.id ?? newId('toolu'), name: tool.name ?? '', input: {} };
      out.push(sse('content_block_start', { index, content_block: block }));
      const pieces = parseObject(tool.pieces.join('')) ? tool.pieces : ['{}'];
      for (const partial_json of pieces) out.push(sse('content_block_delta', { index, delta: { type: 'input_json_delta', partial_json } }));
      out.push(sse('content_block_stop', { index }));
    }
  }

  private finish(out: string[]): void {
    this.closeOpen(out);
    this.emitTools(out);
    this.finished = true;
    const hasToolCalls = this.tools.size > 0;
    this.release();
    const stop = stopOf({ finishReason: this.finishReason, reported: this.reported, textTail: this.tail, hasToolCalls }, this.stops);
    out.push(sse('message_delta', { delta: stop, usage: usageOf(this.usage) }), sse('message_stop', {}));
  }

  private failWith(out: string[], type: string, message: string): void {
    this.finished = true;
    this.release();
    out.push(sse('error', { error: { type, message: message.slice(0, 1000) } }));
  }

  private release(): void {
    this.tools.clear();
    this.held = 0;
  }
}

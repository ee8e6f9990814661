import type { AnswerContext, StreamTranslator } from '../dialect-codec';
import { reasoningOf, stopOf, stopSequences, tailLength, usageOf, wantsThinking } from './anthropic-answer';
import { anthropicErrorType } from './anthropic-errors';
import { ChatSseReader } from './chat-sse-reader';
import { newId } from './ids';
import { arr, num, obj, Obj, parseObject, str } from './shape';

/** A tool call being received: its block starts once its name is known, its arguments go out when it ends. */
interface ToolBlock {
  kind: 'tool';
  key: string;
  id?: string;
  name?: string;
  index?: number;
  pieces: string[];
}

type OpenBlock = { kind: 'text' | 'thinking'; index: number } | ToolBlock;

function sse(type: string, payload: Obj): string {
  return `event: ${type}\ndata: ${JSON.stringify({ type, ...payload })}\n\n`;
}

/**
 * A streamed chat-completions answer as Anthropic Messages events: `message_start`, `ping`, one
 * block at a time (thinking, text, each tool call in its own block, in order), `message_delta` with
 * the stop reason and usage, `message_stop`.
 *
 * Tool arguments are held until their call ends: only then is it known whether the whole text is a
 * JSON object. When it is, the pieces go out as the backend streamed them (`input_json_delta`);
 * otherwise a single `{}`, so the client's concatenation always parses.
 */
export class AnthropicStream implements StreamTranslator {
  private readonly reader = new ChatSseReader();
  private readonly thinking: boolean;
  private readonly stops: string[];
  private readonly tailMax: number;
  private started = false;
  private finished = false;
  private nextIndex = 0;
  private open: OpenBlock | null = null;
  private readonly closedTools = new Set<string>();
  private hasToolCalls = false;
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
    const out: string[] = [];
    const events = this.reader.push(typeof text === 'string' ? text : '');
    // Nothing is said before the backend's first event: a backend that answered with a JSON error
    // instead of SSE can still be answered as one whole error.
    if (events.length > 0) this.start(out);
    for (const event of events) {
      if (this.finished) break;
      if ('done' in event) this.finish(out);
      else this.chunk(event.chunk, out);
    }
    return out.join('');
  }

  end(): string {
    const out: string[] = [];
    this.start(out);
    for (const event of this.reader.end()) {
      if (this.finished) break;
      if ('done' in event) this.finish(out);
      else this.chunk(event.chunk, out);
    }
    if (this.finished) return out.join('');
    // A stream cut before any finish_reason is not a whole answer: say so rather than fake `end_turn`.
    if (this.finishReason === null) this.fail(out, 'api_error', 'The backend stream ended before the answer was complete');
    else this.finish(out);
    return out.join('');
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

  private chunk(chunk: Obj, out: string[]): void {
    const error = chunk.error;
    if (error !== undefined && error !== null) {
      const e = obj(error);
      const status = num(e?.code) ?? 500;
      this.fail(out, anthropicErrorType(status), str(e?.message) ?? str(error) ?? 'The backend failed while streaming');
      return;
    }
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
    for (const fragment of arr(delta?.tool_calls) ?? []) this.toolFragment(obj(fragment), out);
    if (choice.finish_reason !== undefined && choice.finish_reason !== null) this.finishReason = choice.finish_reason;
    this.report(choice.stop_reason);
    this.report(choice.stopping_word);
  }

  /** Kept only when it is text: most chunks carry `null` here, and the list must not grow with them. */
  private report(value: unknown): void {
    if (typeof value === 'string' && value !== '') this.reported.push(value);
  }

  /** A text or thinking delta, opening its block (and closing the one before) when the kind changes. */
  private blockDelta(kind: 'text' | 'thinking', delta: Obj, out: string[]): void {
    if (this.open?.kind !== kind) {
      this.close(out);
      const index = this.nextIndex++;
      const block = kind === 'text' ? { type: 'text', text: '' } : { type: 'thinking', thinking: '', signature: '' };
      out.push(sse('content_block_start', { index, content_block: block }));
      this.open = { kind, index };
    }
    out.push(sse('content_block_delta', { index: (this.open as { index: number }).index, delta }));
  }

  /** Which call a fragment belongs to: its `index`, else its `id`, else the call being received. */
  private keyOf(fragment: Obj): string {
    const index = num(fragment.index);
    if (index !== undefined) return `#${index}`;
    const id = str(fragment.id);
    if (id) return this.open?.kind === 'tool' && this.open.id === id ? this.open.key : `id:${id}`;
    return this.open?.kind === 'tool' ? this.open.key : '#0';
  }

  private toolFragment(fragment: Obj | undefined, out: string[]): void {
    if (!fragment) return;
    const key = this.keyOf(fragment);
    // Parallel calls arrive one after another; a fragment for a call already closed cannot be placed.
    if (this.closedTools.has(key)) return;
    if (this.open?.kind !== 'tool' || this.open.key !== key) {
      this.close(out);
      this.open = { kind: 'tool', key, pieces: [] };
    }
    const tool = this.open;
    const fn = obj(fragment.function);
    tool.id ??= str(fragment.id) || undefined;
    const name = str(fn?.name);
    if (name && !tool.name) tool.name = name;
    const args = str(fn?.arguments);
    if (args) tool.pieces.push(args);
    if (tool.name && tool.index === undefined) this.startTool(tool, out);
  }

  private startTool(tool: ToolBlock, out: string[]): void {
    tool.index = this.nextIndex++;
    this.hasToolCalls = true;
    const block = { type: 'tool_use', id: tool.id ?? newId('toolu'), name: tool.name ?? '', input: {} };
    out.push(sse('content_block_start', { index: tool.index, content_block: block }));
  }

  private close(out: string[]): void {
    const block = this.open;
    if (!block) return;
    this.open = null;
    if (block.kind === 'tool') {
      this.closedTools.add(block.key);
      if (block.index === undefined) this.startTool(block, out);
      const index = block.index as number;
      const pieces = parseObject(block.pieces.join('')) ? block.pieces : ['{}'];
      for (const partial_json of pieces) out.push(sse('content_block_delta', { index, delta: { type: 'input_json_delta', partial_json } }));
      out.push(sse('content_block_stop', { index }));
      return;
    }
    out.push(sse('content_block_stop', { index: block.index }));
  }

  private finish(out: string[]): void {
    this.close(out);
    this.finished = true;
    const stop = stopOf({ finishReason: this.finishReason, reported: this.reported, textTail: this.tail, hasToolCalls: this.hasToolCalls }, this.stops);
    out.push(sse('message_delta', { delta: stop, usage: usageOf(this.usage) }), sse('message_stop', {}));
  }

  private fail(out: string[], type: string, message: string): void {
    this.finished = true;
    out.push(sse('error', { error: { type, message: message.slice(0, 1000) } }));
  }
}

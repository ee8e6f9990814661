import type { AnswerContext, Json, StreamTranslator } from '../dialect-codec';
import { Ending, endingOf, Items, reasoningText, responseObject, usageOf } from './answer';
import { HELD_TEXT_MESSAGE, MAX_HELD_TEXT, SSE_OVERFLOW_MESSAGE, SseLines } from '../sse-lines';
import { customInput, flatToolsOf } from './request-tools';
import { CodecSources, isRecord, num, str } from './shapes';

interface TextItem {
  index: number;
  id: string;
  text: string;
}

interface CallItem extends TextItem {
  callId: string;
  name: string;
  /** A call of a client's `custom` (freeform) tool: given back as a `custom_tool_call` with its `input`. */
  custom: boolean;
}

const TRUNCATED = 'The backend stream ended before its answer was complete';

/**
 * One streamed chat completion as Responses events: `response.created`, `response.in_progress`, each
 * output item's added → deltas → done, then `response.completed` (or `response.incomplete` when the
 * backend stopped at its token limit, `response.failed` when it reported an error or broke off).
 * Reasoning text becomes a `reasoning` item with one summary part; text one `message` item; each
 * tool call one `function_call` item (a `custom_tool_call` for the client's `custom` tools, its input
 * sent whole when the call closes). Calls stay open until the answer ends, so arguments a backend
 * interleaves between calls all land in theirs. The texts held for the `.done` events are capped
 * (`MAX_HELD_TEXT`), as is one SSE line (`MAX_SSE_LINE`): past either the answer ends `failed`.
 */
export class ResponsesStream implements StreamTranslator {
  private readonly reader = new SseLines();
  private readonly id: string;
  private readonly namespaces: Map<string, string>;
  private readonly customTools: Set<string>;
  private held = 0;
  private readonly output: Json[] = [];
  private seq = 0;
  private nextIndex = 0;
  private createdAt: number | undefined;
  private finished = false;
  private finishReason: unknown;
  private usage: Json | undefined;
  private reasoning: TextItem | undefined;
  private text: TextItem | undefined;
  private readonly calls = new Map<number, CallItem>();

  constructor(
    private readonly ctx: AnswerContext,
    private readonly sources: CodecSources,
  ) {
    this.id = sources.newId('resp_');
    const tools = flatToolsOf(ctx.request);
    this.namespaces = tools.namespaces;
    this.customTools = tools.custom;
  }

  push(text: string): string {
    if (this.finished) return '';
    return this.read(this.reader.push(text));
  }

  end(): string {
    if (this.finished) return '';
    const out = this.read(this.reader.end());
    if (this.finished) return out;
    // A stream cut (or `[DONE]`) before any finish_reason is not a whole answer.
    const ending: Ending =
      this.finishReason !== undefined ? endingOf(this.finishReason) : { status: 'failed', error: { code: 'server_error', message: TRUNCATED } };
    return out + this.finish(ending);
  }

  fail(error: { code: string; message: string; status: number }): string {
    if (this.finished) return '';
    const code = str(error?.code) ?? 'server_error';
    return this.finish({ status: 'failed', error: { code, message: str(error?.message) ?? 'The gateway ended the stream' } });
  }

  private read(events: string[]): string {
    let out = '';
    for (const data of events) out += this.onData(data);
    if (this.finished) return out;
    if (this.reader.overflowed) return out + this.finish({ status: 'failed', error: { code: 'server_error', message: SSE_OVERFLOW_MESSAGE } });
    if (this.held > MAX_HELD_TEXT) return out + this.finish({ status: 'failed', error: { code: 'server_error', message: HELD_TEXT_MESSAGE } });
    return out;
  }

  private onData(data: string): string {
    if (this.finished) return '';
    if (data.trim() === '[DONE]') return '';
    let chunk: unknown;
    try {
      chunk = JSON.parse(data);
    } catch {
      return '';
    }
    if (!isRecord(chunk)) return '';
    const failure = failureOf(chunk);
    if (failure) return this.finish({ status: 'failed', error: failure });
    let out = this.start(chunk.created);
    const usage = usageOf(chunk.usage);
    if (usage) this.usage = usage;
    const choice = Array.isArray(chunk.choices) ? chunk.choices.find((c) => isRecord(c) && (c.index ?? 0) === 0) : undefined;
    if (!isRecord(choice)) return out;
    const delta = isRecord(choice.delta) ? choice.delta : {};
    const reasoning = reasoningText(delta);
    if (reasoning) out += this.reasoningDelta(reasoning);
    const content = (str(delta.content) ?? '') + (str(delta.refusal) ?? '');
    if (content !== '') out += this.textDelta(content);
    if (Array.isArray(delta.tool_calls)) {
      for (const [position, call] of delta.tool_calls.entries()) if (isRecord(call)) out += this.callDelta(call, position);
    }
    if (typeof choice.finish_reason === 'string') this.finishReason = choice.finish_reason;
    return out;
  }

  private start(created: unknown): string {
    if (this.createdAt !== undefined) return '';
    this.createdAt = num(created) ?? this.sources.nowSecs();
    const response = this.response({ status: 'in_progress' }, false);
    return this.event('response.created', { response }) + this.event('response.in_progress', { response });
  }

  private reasoningDelta(delta: string): string {
    let out = this.closeText('completed');
    if (!this.reasoning) {
      const item = (this.reasoning = { index: this.nextIndex++, id: this.sources.newId('rs_'), text: '' });
      out += this.event('response.output_item.added', { output_index: item.index, item: Items.reasoning(item.id, '') });
      out += this.event('response.reasoning_summary_part.added', { ...this.at(item), summary_index: 0, part: { type: 'summary_text', text: '' } });
    }
    this.reasoning.text += delta;
    this.held += delta.length;
    return out + this.delta('response.reasoning_summary_text.delta', this.reasoning, ',"summary_index":0', delta, '');
  }

  private textDelta(delta: string): string {
    let out = this.closeReasoning();
    if (!this.text) {
      const item = (this.text = { index: this.nextIndex++, id: this.sources.newId('msg_'), text: '' });
      out += this.event('response.output_item.added', { output_index: item.index, item: Items.message(item.id, 'in_progress', []) });
      out += this.event('response.content_part.added', { ...this.at(item), content_index: 0, part: Items.textPart('') });
    }
    this.text.text += delta;
    this.held += delta.length;
    return out + this.delta('response.output_text.delta', this.text, ',"content_index":0', delta, ',"logprobs":[]');
  }

  private callDelta(call: Json, position: number): string {
    let out = this.closeReasoning() + this.closeText('completed');
    const key = num(call.index) ?? position;
    const fn = isRecord(call.function) ? call.function : {};
    let item = this.calls.get(key);
    if (!item) {
      const name = str(fn.name) ?? '';
      const custom = this.customTools.has(name);
      const id = this.sources.newId(custom ? 'ctc_' : 'fc_');
      item = { index: this.nextIndex++, id, text: '', callId: str(call.id) || this.sources.newId('call_'), name, custom };
      this.calls.set(key, item);
      out += this.event('response.output_item.added', { output_index: item.index, item: this.callItem(item, 'in_progress') });
    } else if (item.name === '' && typeof fn.name === 'string') {
      item.name = fn.name;
    }
    const args = typeof fn.arguments === 'string' ? fn.arguments : '';
    if (args === '') return out;
    item.text += args;
    this.held += args.length;
    // A custom tool's input is the `input` argument inside this JSON: it is known only when the call ends.
    if (item.custom) return out;
    return out + this.delta('response.function_call_arguments.delta', item, '', args, '');
  }

  private closeReasoning(): string {
    const item = this.reasoning;
    if (!item) return '';
    this.reasoning = undefined;
    const part = { type: 'summary_text', text: item.text };
    return (
      this.event('response.reasoning_summary_text.done', { ...this.at(item), summary_index: 0, text: item.text }) +
      this.event('response.reasoning_summary_part.done', { ...this.at(item), summary_index: 0, part }) +
      this.itemDone(item.index, Items.reasoning(item.id, item.text))
    );
  }

  private closeText(status: string): string {
    const item = this.text;
    if (!item) return '';
    this.text = undefined;
    const part = Items.textPart(item.text);
    return (
      this.event('response.output_text.done', { ...this.at(item), content_index: 0, text: item.text, logprobs: [] }) +
      this.event('response.content_part.done', { ...this.at(item), content_index: 0, part }) +
      this.itemDone(item.index, Items.message(item.id, status, [part]))
    );
  }

  private closeCall(item: CallItem, status: string): string {
    if (item.custom) {
      const input = customInput(item.text);
      const delta = input === '' ? '' : this.delta('response.custom_tool_call_input.delta', item, '', input, '');
      return delta + this.event('response.custom_tool_call_input.done', { ...this.at(item), input }) + this.itemDone(item.index, this.callItem(item, status));
    }
    return (
      this.event('response.function_call_arguments.done', { ...this.at(item), name: item.name, arguments: item.text }) +
      this.itemDone(item.index, this.callItem(item, status))
    );
  }

  /** Closes what is still open (in output order) and sends the final event; nothing follows it. */
  private finish(ending: Ending): string {
    let out = this.start(undefined);
    const status = ending.status === 'completed' ? 'completed' : 'incomplete';
    const open: Array<[number, () => string]> = [];
    if (this.reasoning) open.push([this.reasoning.index, () => this.closeReasoning()]);
    if (this.text) open.push([this.text.index, () => this.closeText(status)]);
    for (const call of this.calls.values()) open.push([call.index, () => this.closeCall(call, status)]);
    this.calls.clear();
    for (const [, close] of open.sort((a, b) => a[0] - b[0])) out += close();
    this.finished = true;
    this.held = 0;
    const type = ending.status === 'completed' ? 'response.completed' : ending.status === 'incomplete' ? 'response.incomplete' : 'response.failed';
    out += this.event(type, { response: this.response(ending, true) });
    this.output.length = 0;
    return out;
  }

  private response(ending: Ending, final: boolean): Json {
    const output = final ? this.output : [];
    return responseObject({ id: this.id, createdAt: this.createdAt ?? 0, ending, output, usage: final ? this.usage : undefined }, this.ctx);
  }

  private callItem(item: CallItem, status: string): Json {
    if (item.custom)
      return Items.customCall(item.id, item.callId, item.name, status === 'in_progress' ? '' : customInput(item.text), status, this.namespaces.get(item.name));
    return Items.call(item.id, item.callId, item.name, status === 'in_progress' ? '' : item.text, status, this.namespaces.get(item.name));
  }

  private itemDone(index: number, item: Json): string {
    this.output[index] = item;
    return this.event('response.output_item.done', { output_index: index, item });
  }

  private at(item: TextItem): Json {
    return { item_id: item.id, output_index: item.index };
  }

  /**
   * A delta event, written directly: deltas are nearly all of a stream's events, and building then
   * serializing an object for each costs more than the rest of the translation (same JSON either way).
   */
  private delta(type: string, item: TextItem, index: string, delta: string, tail: string): string {
    const at = `"item_id":${JSON.stringify(item.id)},"output_index":${item.index}${index}`;
    return `event: ${type}\ndata: {"type":"${type}","sequence_number":${this.seq++},${at},"delta":${JSON.stringify(delta)}${tail}}\n\n`;
  }

  private event(type: string, fields: Json): string {
    return `event: ${type}\ndata: ${JSON.stringify({ type, sequence_number: this.seq++, ...fields })}\n\n`;
  }
}

/** A backend's in-stream error chunk (`{error: {...}}`, or vLLM's flat `{object: "error", message}`). */
function failureOf(chunk: Json): { code: string; message: string } | undefined {
  const error = isRecord(chunk.error) ? chunk.error : chunk.object === 'error' ? chunk : undefined;
  if (!error) return undefined;
  const code = typeof error.code === 'string' ? error.code : 'server_error';
  return { code, message: str(error.message) ?? 'The backend reported an error in its stream' };
}

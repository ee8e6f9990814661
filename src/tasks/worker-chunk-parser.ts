import type { TaskEndpoint } from './task-request';

/** Token counts a backend reported in its stream (`usage`, OpenAI style). */
export interface StreamUsage {
  promptTokens?: number;
  completionTokens?: number;
}

export interface ChunkListener {
  /** A non-empty text delta: chat `choices[0].delta.content`, completions `choices[0].text`. */
  text(t: string): void;
  usage(u: StreamUsage): void;
}

const LF = 10;
const CR = 13;
/** Longest event data kept; a backend sending more in one event is not speaking OpenAI SSE. */
const MAX_EVENT_CHARS = 1 << 20;

/**
 * Reads the OpenAI-style SSE stream a worker relays, in chunks that may split anywhere (inside a
 * line, inside a JSON document, between `\r` and `\n`), and hands the text deltas and usage to
 * its listener. Other fields and events are ignored, so is anything that is not JSON.
 */
export class WorkerChunkParser {
  /** The unfinished line at the end of the last chunk. */
  private partial = '';
  /** `data:` lines of the event being read. */
  private data: string[] = [];
  private dataChars = 0;
  /** The last chunk ended with `\r`: a `\n` starting the next one belongs to it. */
  private pendingCR = false;

  constructor(
    private readonly endpoint: TaskEndpoint,
    private readonly listener: ChunkListener,
  ) {}

  feed(chunk: string): void {
    let start = 0;
    if (this.pendingCR && chunk.charCodeAt(0) === LF) start = 1;
    this.pendingCR = false;
    for (let i = start; i < chunk.length; i++) {
      const c = chunk.charCodeAt(i);
      if (c !== LF && c !== CR) continue;
      const piece = chunk.slice(start, i);
      const line = this.partial ? this.partial + piece : piece;
      this.partial = '';
      this.line(line);
      if (c === CR) {
        if (i + 1 === chunk.length) this.pendingCR = true;
        else if (chunk.charCodeAt(i + 1) === LF) i++;
      }
      start = i + 1;
    }
    if (start < chunk.length) {
      this.partial += chunk.slice(start);
      if (this.partial.length > MAX_EVENT_CHARS) this.partial = this.partial.slice(-MAX_EVENT_CHARS);
    }
  }

  /** The stream ended: an event not followed by a blank line still counts. */
  end(): void {
    if (this.partial) this.line(this.partial);
    this.partial = '';
    this.dispatch();
  }

  private line(line: string): void {
    if (line === '') return this.dispatch();
    if (!line.startsWith('data:')) return; // comments, event:, id:, retry:
    const value = line.charCodeAt(5) === 32 ? line.slice(6) : line.slice(5);
    this.dataChars += value.length;
    if (this.dataChars <= MAX_EVENT_CHARS) this.data.push(value);
  }

  private dispatch(): void {
    if (this.data.length === 0) return;
    const data = this.data.length === 1 ? this.data[0] : this.data.join('\n');
    this.data = [];
    this.dataChars = 0;
    if (data === '[DONE]') return;
    readPayload(data, this.endpoint, this.listener);
  }
}

/** One JSON document of the stream (or a whole non-streamed answer): its text and usage. */
export function readPayload(data: string, endpoint: TaskEndpoint, listener: ChunkListener): boolean {
  let json: unknown;
  try {
    json = JSON.parse(data);
  } catch {
    return false;
  }
  if (!isObject(json)) return false;
  const choice = Array.isArray(json.choices) ? json.choices[0] : undefined;
  if (isObject(choice)) {
    const text = endpoint === '/v1/chat/completions' ? (contentOf(choice.delta) ?? contentOf(choice.message)) : choice.text;
    if (typeof text === 'string' && text !== '') listener.text(text);
  }
  if (isObject(json.usage)) {
    const u = json.usage;
    const usage: StreamUsage = {};
    if (isCount(u.prompt_tokens)) usage.promptTokens = u.prompt_tokens;
    if (isCount(u.completion_tokens)) usage.completionTokens = u.completion_tokens;
    if (usage.promptTokens !== undefined || usage.completionTokens !== undefined) listener.usage(usage);
  }
  return true;
}

function contentOf(v: unknown): unknown {
  return isObject(v) ? v.content : undefined;
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function isCount(v: unknown): v is number {
  return typeof v === 'number' && Number.isInteger(v) && v >= 0;
}

import { TokenCounts } from '../../protocol';

/**
 * Token accounting from backend answers in the three dialects we relay:
 * - OpenAI chat/completions: `usage.{prompt_tokens, completion_tokens, total_tokens}`
 *   (streams carry it in the last chunk when `stream_options.include_usage` is set; llama-server
 *   always sends it);
 * - Anthropic messages: `usage.{input_tokens, output_tokens}`; streams split it between
 *   `message_start` (`message.usage`) and the cumulative `message_delta` (`usage`);
 * - OpenAI responses: `usage.{input_tokens, output_tokens, total_tokens}`, streamed inside
 *   `response.completed` (`response.usage`).
 * Later values replace earlier ones field by field, which yields the final numbers for all three.
 */
class UsageAccumulator {
  private prompt?: number;
  private completion?: number;
  private total?: number;

  /** Looks for a usage object in one parsed JSON document (a body or one SSE event). */
  absorbDocument(doc: unknown): void {
    if (!isObject(doc)) return;
    this.absorbUsage(doc.usage);
    if (isObject(doc.message)) this.absorbUsage(doc.message.usage);
    if (isObject(doc.response)) this.absorbUsage(doc.response.usage);
  }

  private absorbUsage(usage: unknown): void {
    if (!isObject(usage)) return;
    const prompt = count(usage.prompt_tokens) ?? anthropicInput(usage);
    const completion = count(usage.completion_tokens) ?? count(usage.output_tokens);
    const total = count(usage.total_tokens);
    if (prompt !== undefined) this.prompt = prompt;
    if (completion !== undefined) this.completion = completion;
    if (total !== undefined) this.total = total;
  }

  result(): TokenCounts | undefined {
    if (this.prompt === undefined && this.completion === undefined && this.total === undefined) return undefined;
    const counts: TokenCounts = {};
    if (this.prompt !== undefined) counts.prompt_tokens = this.prompt;
    if (this.completion !== undefined) counts.completion_tokens = this.completion;
    const total = this.total ?? (this.prompt !== undefined && this.completion !== undefined ? this.prompt + this.completion : undefined);
    if (total !== undefined) counts.total_tokens = total;
    return counts;
  }
}

/** Anthropic reports cache reads/writes separately from `input_tokens`; all of them are prompt. */
function anthropicInput(usage: Record<string, unknown>): number | undefined {
  const input = count(usage.input_tokens);
  if (input === undefined) return undefined;
  return input + (count(usage.cache_creation_input_tokens) ?? 0) + (count(usage.cache_read_input_tokens) ?? 0);
}

function count(v: unknown): number | undefined {
  return typeof v === 'number' && Number.isInteger(v) && v >= 0 ? v : undefined;
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Token counts from a complete (non-streaming) JSON body; undefined when it has none. */
export function usageFromJsonBody(body: string): TokenCounts | undefined {
  if (!body.includes('"usage"')) return undefined;
  let doc: unknown;
  try {
    doc = JSON.parse(body);
  } catch {
    return undefined;
  }
  const acc = new UsageAccumulator();
  acc.absorbDocument(doc);
  return acc.result();
}

/** Longest partial line kept between reads; beyond it the line is skipped (no usage is that big). */
const MAX_PENDING_LINE_CHARS = 1 << 20;

/**
 * Reads an SSE stream incrementally (text as it arrives, any split) and keeps only the running
 * token counts: nothing but the current partial line and the current event's data is buffered.
 */
export class SseUsageTracker {
  private readonly acc = new UsageAccumulator();
  private pendingLine = '';
  private skippingOverlongLine = false;
  private lastWasCR = false;
  private eventData: string[] = [];

  push(text: string): void {
    let start = 0;
    for (let i = 0; i < text.length; i++) {
      const ch = text.charCodeAt(i);
      if (ch !== 10 && ch !== 13) continue;
      // "\r\n" is one line ending: the "\n" right after a "\r" closes nothing.
      const isLfAfterCr = ch === 10 && (i > 0 ? text.charCodeAt(i - 1) === 13 : this.lastWasCR);
      if (!isLfAfterCr) this.endLine(this.pendingLine + text.slice(start, i));
      this.pendingLine = '';
      start = i + 1;
    }
    this.lastWasCR = text.length > 0 && text.charCodeAt(text.length - 1) === 13;
    this.appendPartial(text.slice(start));
  }

  /** Call once at the end of the stream; returns the final counts, if the stream had any. */
  finish(): TokenCounts | undefined {
    if (this.pendingLine) this.endLine(this.pendingLine);
    this.pendingLine = '';
    this.dispatchEvent();
    return this.acc.result();
  }

  private appendPartial(rest: string): void {
    if (!rest || this.skippingOverlongLine) return;
    if (this.pendingLine.length + rest.length > MAX_PENDING_LINE_CHARS) {
      this.pendingLine = '';
      this.skippingOverlongLine = true;
      return;
    }
    this.pendingLine += rest;
  }

  private endLine(line: string): void {
    if (this.skippingOverlongLine) {
      this.skippingOverlongLine = false;
      return;
    }
    if (line === '') {
      this.dispatchEvent();
      return;
    }
    if (line.startsWith('data:')) {
      const value = line.charCodeAt(5) === 32 ? line.slice(6) : line.slice(5);
      this.eventData.push(value);
    }
  }

  private dispatchEvent(): void {
    if (this.eventData.length === 0) return;
    const data = this.eventData.join('\n');
    this.eventData = [];
    if (!data.includes('"usage"')) return;
    try {
      this.acc.absorbDocument(JSON.parse(data));
    } catch {
      // Not JSON (e.g. "[DONE]"), nothing to count.
    }
  }
}

/** Longest `usage` value kept by JsonUsageScanner; real ones are a few hundred characters. */
const MAX_USAGE_VALUE_CHARS = 64 * 1024;
/** Outside strings only these characters change the scanner's state. */
const JSON_STRUCTURAL = /["{}[\],:]/g;
/** Inside a string only these do. */
const JSON_STRING_SPECIAL = /["\\]/g;

/**
 * Token counts from a non-streaming JSON body read in pieces (any split), for bodies too large to
 * hold in memory a second time: it tracks strings and nesting only and keeps nothing but the raw
 * text of the top-level `"usage"` member, parsed at the end like `usageFromJsonBody` would. The
 * body is not validated (the backend answered it as JSON); a body without a top-level usage
 * object, or one that is not JSON at all, yields undefined.
 */
export class JsonUsageScanner {
  private depth = 0;
  private rootIsObject = false;
  private inString = false;
  private escaped = false;
  /** The string being read is a member name of the root object. */
  private readingKey = false;
  private key = '';
  /** At depth 1 of the root object, after `{` or `,`: the next string is a member name. */
  private expectKey = false;
  /** The member name read last at depth 1, until its `:`. */
  private lastKey?: string;
  /** Raw text of the usage value while it is being read (undefined otherwise). */
  private capture?: string[];
  private captureChars = 0;
  private usageText?: string;

  push(text: string): void {
    let i = 0;
    let captureFrom = 0; // where the capture continues within this piece
    const n = text.length;
    while (i < n) {
      if (this.inString) {
        if (this.escaped) {
          this.escaped = false;
          if (this.readingKey) this.appendKey(text, i, i + 1);
          i++;
          continue;
        }
        JSON_STRING_SPECIAL.lastIndex = i;
        const m = JSON_STRING_SPECIAL.exec(text);
        const end = m ? m.index : n;
        if (this.readingKey) this.appendKey(text, i, end + (m && text.charCodeAt(end) === 92 ? 1 : 0));
        if (!m) break;
        i = end + 1;
        if (text.charCodeAt(end) === 92) {
          this.escaped = true;
          continue;
        }
        this.inString = false;
        if (this.readingKey) {
          this.readingKey = false;
          this.lastKey = this.key;
        }
        continue;
      }
      JSON_STRUCTURAL.lastIndex = i;
      const m = JSON_STRUCTURAL.exec(text);
      if (!m) break;
      const at = m.index;
      i = at + 1;
      switch (text.charCodeAt(at)) {
        case 34: // "
          this.inString = true;
          this.readingKey = this.depth === 1 && this.rootIsObject && this.expectKey;
          if (this.readingKey) {
            this.key = '';
            this.expectKey = false;
          }
          break;
        case 123: // {
        case 91: // [
          this.depth++;
          if (this.depth === 1) {
            this.rootIsObject = text.charCodeAt(at) === 123;
            this.expectKey = this.rootIsObject;
          }
          break;
        case 125: // }
        case 93: // ]
          if (this.depth === 1) this.endCapture(text, captureFrom, at);
          this.depth--;
          break;
        case 44: // ,
          if (this.depth === 1) {
            this.endCapture(text, captureFrom, at);
            this.expectKey = this.rootIsObject;
          }
          break;
        case 58: // :
          if (this.depth === 1 && this.lastKey === 'usage') {
            this.capture = [];
            this.captureChars = 0;
            captureFrom = i;
          }
          this.lastKey = undefined;
          break;
      }
    }
    if (this.capture) this.appendCapture(text, captureFrom, n);
  }

  /** Call once after the last piece. */
  finish(): TokenCounts | undefined {
    if (this.usageText === undefined) return undefined;
    let usage: unknown;
    try {
      usage = JSON.parse(this.usageText);
    } catch {
      return undefined;
    }
    const acc = new UsageAccumulator();
    acc.absorbDocument({ usage });
    return acc.result();
  }

  private appendKey(text: string, from: number, to: number): void {
    // Only "usage" matters: longer names need not be kept whole.
    if (this.key.length <= 8) this.key += text.slice(from, Math.min(to, from + 9));
  }

  private appendCapture(text: string, from: number, to: number): void {
    if (!this.capture || to <= from) return;
    this.captureChars += to - from;
    if (this.captureChars > MAX_USAGE_VALUE_CHARS)
      this.capture = undefined; // not a usage object we know
    else this.capture.push(text.slice(from, to));
  }

  private endCapture(text: string, from: number, to: number): void {
    if (!this.capture) return;
    this.appendCapture(text, from, to);
    if (this.capture) this.usageText = this.capture.join('');
    this.capture = undefined;
  }
}

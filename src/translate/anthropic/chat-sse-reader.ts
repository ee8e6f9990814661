import { obj, Obj } from './shape';

/** One event of a chat-completions stream: a parsed chunk, or the `[DONE]` that ends it. */
export type ChatSseEvent = { chunk: Obj } | { done: true };

/**
 * Splits a backend's SSE text into chat chunks. Text arrives cut anywhere (inside a line, between
 * `\r` and `\n`), so an incomplete line waits for the next push; lines end with `\n`, `\r\n` or `\r`.
 * Data that is not a JSON object is skipped: a backend's garbage never stops the stream.
 */
export class ChatSseReader {
  private buffer = '';
  private data: string[] = [];

  push(text: string): ChatSseEvent[] {
    this.buffer += text;
    const events: ChatSseEvent[] = [];
    let start = 0;
    // Searched again only once passed: a push of many lines without `\r` stays linear.
    let cr = this.buffer.indexOf('\r');
    for (;;) {
      const lf = this.buffer.indexOf('\n', start);
      if (cr !== -1 && cr < start) cr = this.buffer.indexOf('\r', start);
      const end = cr !== -1 && (lf === -1 || cr < lf) ? cr : lf;
      if (end === -1) break;
      // A `\r` at the very end may be the first half of `\r\n`: wait for what follows.
      if (end === cr && end === this.buffer.length - 1) break;
      const line = this.buffer.slice(start, end);
      start = end === cr && this.buffer[end + 1] === '\n' ? end + 2 : end + 1;
      this.line(line, events);
    }
    this.buffer = this.buffer.slice(start);
    return events;
  }

  /** The stream ended: a last event not followed by a blank line still counts. */
  end(): ChatSseEvent[] {
    const events: ChatSseEvent[] = [];
    const rest = this.buffer.replace(/\r$/, '');
    this.buffer = '';
    if (rest !== '') this.line(rest, events);
    this.line('', events);
    return events;
  }

  private line(line: string, events: ChatSseEvent[]): void {
    if (line === '') {
      if (this.data.length > 0) this.dispatch(this.data.join('\n'), events);
      this.data = [];
      return;
    }
    if (!line.startsWith('data:')) return; // comments (`: ping`), `event:`, `id:`, `retry:`
    this.data.push(line.slice(line.startsWith('data: ') ? 6 : 5));
  }

  private dispatch(data: string, events: ChatSseEvent[]): void {
    if (data.trim() === '[DONE]') {
      events.push({ done: true });
      return;
    }
    let parsed: unknown;
    try {
      parsed = JSON.parse(data);
    } catch {
      return;
    }
    const chunk = obj(parsed);
    if (chunk) events.push({ chunk });
  }
}

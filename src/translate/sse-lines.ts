/**
 * The most a backend may send as one SSE line, or as the `data` of one event (in UTF-16 units, 1 Mi).
 * A chat chunk is a few hundred bytes; a line past this is a broken or hostile backend, and holding it
 * (and scanning it on every push) would let one stream stall the gateway.
 */
export const MAX_SSE_LINE = 1024 * 1024;

/**
 * Reads a chat-completions SSE stream given in chunks cut anywhere: yields each event's `data` once the
 * blank line ending it has arrived. Lines end with `\n`, `\r\n` or `\r` (a `\r` that ends one push and
 * a `\n` that starts the next are one line end); several `data:` lines join with `\n`.
 *
 * Only the new text of each push is searched, so a long stream costs time in proportion to its size.
 * A line or an event's data longer than `MAX_SSE_LINE` stops the reader: `overflowed` turns true, what
 * it held is released, and every later push yields nothing (the caller ends the stream with a failure).
 */
export class SseLines {
  /** The start of a line not yet ended: the text of earlier pushes. */
  private pending = '';
  private data: string[] = [];
  private dataLength = 0;
  /** The last push ended with `\r`: a `\n` opening the next one belongs to that line end. */
  private afterCr = false;
  private stopped = false;

  /** The backend sent a line or an event past `MAX_SSE_LINE`; the reader holds nothing and reads no more. */
  get overflowed(): boolean {
    return this.stopped;
  }

  /** The data of every event completed by this chunk (those before an overflow, when it overflows). */
  push(text: string): string[] {
    const events: string[] = [];
    if (this.stopped || typeof text !== 'string' || text === '') return events;
    let start = 0;
    if (this.afterCr && text[0] === '\n') start = 1;
    this.afterCr = false;
    // Each searched once per push, and again only once passed: the scan stays linear in the text.
    let lf = text.indexOf('\n', start);
    let cr = text.indexOf('\r', start);
    while (lf !== -1 || cr !== -1) {
      const end = cr !== -1 && (lf === -1 || cr < lf) ? cr : lf;
      const line = this.pending === '' ? text.slice(start, end) : this.pending + text.slice(start, end);
      this.pending = '';
      start = end + 1;
      if (end === cr) {
        if (start === text.length) this.afterCr = true;
        else if (text[start] === '\n') start++;
      }
      if (!this.line(line, events)) return events;
      if (lf !== -1 && lf < start) lf = text.indexOf('\n', start);
      if (cr !== -1 && cr < start) cr = text.indexOf('\r', start);
    }
    if (this.pending.length + text.length - start > MAX_SSE_LINE) this.overflow();
    else if (start < text.length) this.pending += text.slice(start);
    return events;
  }

  /** The stream ended: an event whose closing blank line never came still counts. */
  end(): string[] {
    const events: string[] = [];
    if (this.stopped) return events;
    const rest = this.pending;
    this.pending = '';
    if (rest !== '' && !this.line(rest, events)) return events;
    this.line('', events);
    return events;
  }

  /** False when the line overflowed the reader. */
  private line(line: string, events: string[]): boolean {
    if (line.length > MAX_SSE_LINE) {
      this.overflow();
      return false;
    }
    if (line === '') {
      if (this.data.length > 0) events.push(this.data.join('\n'));
      this.data = [];
      this.dataLength = 0;
    } else if (line.startsWith('data:')) {
      const data = line.slice(line.startsWith('data: ') ? 6 : 5);
      this.dataLength += data.length + 1;
      if (this.dataLength > MAX_SSE_LINE) {
        this.overflow();
        return false;
      }
      this.data.push(data);
    }
    // `event:`, `id:`, `retry:` and `:` comment lines carry nothing chat completions needs.
    return true;
  }

  private overflow(): void {
    this.stopped = true;
    this.pending = '';
    this.data = [];
    this.dataLength = 0;
  }
}

/** The failure message both dialects give when the backend's stream overflows the reader. */
export const SSE_OVERFLOW_MESSAGE = `The backend sent an SSE line or event larger than ${MAX_SSE_LINE} characters; the stream was stopped`;

/**
 * The most answer text one translated stream holds until its end (tool arguments, and for Responses the
 * `.done` texts), in UTF-16 units (16 Mi). Past it the stream ends with the dialect's failure: this
 * memory is not counted in the client buffers' ceiling, so it must be bounded here.
 */
export const MAX_HELD_TEXT = 16 * 1024 * 1024;

export const HELD_TEXT_MESSAGE = `The answer grew past the ${MAX_HELD_TEXT} characters a translated stream may hold; the stream was stopped`;

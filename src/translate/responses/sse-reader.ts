/**
 * Reads a chat-completions SSE stream given in chunks cut anywhere: yields each event's `data` once the
 * blank line ending it has arrived (`\n` or `\r\n` line ends; several `data:` lines join with `\n`).
 */
export class SseReader {
  private pending = '';
  private data: string[] = [];

  /** The data of every event completed by this chunk. */
  push(text: string): string[] {
    this.pending += text;
    const events: string[] = [];
    let start = 0;
    for (let nl = this.pending.indexOf('\n', start); nl !== -1; nl = this.pending.indexOf('\n', start)) {
      const line = this.pending.slice(start, nl > start && this.pending[nl - 1] === '\r' ? nl - 1 : nl);
      start = nl + 1;
      this.line(line, events);
    }
    this.pending = this.pending.slice(start);
    return events;
  }

  /** The stream ended: an event whose closing blank line never came still counts. */
  end(): string[] {
    const events: string[] = [];
    if (this.pending !== '') this.line(this.pending.replace(/\r$/, ''), events);
    this.pending = '';
    this.line('', events);
    return events;
  }

  private line(line: string, events: string[]): void {
    if (line === '') {
      if (this.data.length > 0) events.push(this.data.join('\n'));
      this.data = [];
    } else if (line.startsWith('data:')) {
      this.data.push(line.slice(line.startsWith('data: ') ? 6 : 5));
    }
    // `event:`, `id:`, `retry:` and `:` comment lines carry nothing chat completions needs.
  }
}

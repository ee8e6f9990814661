export type TaskEventType = 'started' | 'token' | 'metrics' | 'end' | 'error';

/**
 * A task's SSE events, each formatted once (`id:`, `event:`, `data:` lines) and kept for every
 * reader: the ids are 1, 2, 3… so a reader resuming after id n gets the frames from index n on.
 * Bounded in count and bytes; the terminal event (`end`/`error`) is always kept, past the bound.
 */
export class TaskEventLog {
  private readonly frames: string[] = [];
  private size = 0;

  constructor(
    private readonly maxEvents: number,
    private readonly maxBytes: number,
  ) {}

  /** Id of the last event (0 before the first). */
  get lastId(): number {
    return this.frames.length;
  }

  get bytes(): number {
    return this.size;
  }

  /**
   * Formats and keeps one event, and returns its frame; undefined when it does not fit (the log
   * is full). `terminal` events are kept regardless.
   */
  append(type: TaskEventType, data: object, terminal = false): string | undefined {
    const frame = `id: ${this.frames.length + 1}\nevent: ${type}\ndata: ${JSON.stringify(data)}\n\n`;
    const bytes = Buffer.byteLength(frame);
    if (!terminal && (this.frames.length >= this.maxEvents || this.size + bytes > this.maxBytes)) return undefined;
    this.frames.push(frame);
    this.size += bytes;
    return frame;
  }

  /** Every frame after event `afterId` (all of them for 0), as one string. */
  since(afterId: number): string {
    if (afterId >= this.frames.length) return '';
    return (afterId <= 0 ? this.frames : this.frames.slice(afterId)).join('');
  }

  /**
   * The frames after event `afterId`, joined up to about `maxBytes` characters (at least one
   * frame), and the id of the last of them: a slow reader catches up piece by piece.
   */
  slice(afterId: number, maxBytes: number): { text: string; lastId: number } {
    const from = Math.max(0, afterId);
    let to = from;
    let size = 0;
    while (to < this.frames.length && (to === from || size + this.frames[to].length <= maxBytes)) size += this.frames[to++].length;
    return { text: to - from === 1 ? this.frames[from] : this.frames.slice(from, to).join(''), lastId: to };
  }

  /** The whole stream as a reader from the start receives it. */
  transcript(): string {
    return this.frames.join('');
  }
}

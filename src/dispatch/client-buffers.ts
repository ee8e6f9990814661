import { AppConfig } from '../config';
import { Clock } from '../common/clock';
import { RelayRequest } from './relay-request';

type BufferConfig = Pick<AppConfig, 'streamClientBufferBytes' | 'maxBufferedBytes' | 'slowClientTimeoutMs'>;

/**
 * Response bytes the gateway holds for clients: streamed data a client has not read yet, and
 * non-streaming bodies being collected. A worker's socket is never paused for one client (that
 * stalled every other stream on the worker): each streaming client gets its own bounded backlog
 * (`STREAM_CLIENT_BUFFER_BYTES`); a client that lets it fill loses its request, nobody else waits.
 * The sum over all requests (`MAX_BUFFERED_BYTES`) is what admission checks before taking new work.
 *
 * Per chunk this is O(1): a length read and two additions; listeners and timers are set up only
 * when a client's socket stops taking data.
 */
export class ClientBuffers {
  /** Bytes held across all requests (what MAX_BUFFERED_BYTES bounds). */
  total = 0;

  constructor(
    private readonly config: BufferConfig,
    private readonly clock: Clock,
    /** A streaming request whose client read nothing for SLOW_CLIENT_TIMEOUT_SECS: the dispatcher ends it. */
    private readonly onStuck: (req: RelayRequest) => void,
  ) {}

  /** Whether new work must be refused until clients drain. */
  get full(): boolean {
    return this.total >= this.config.maxBufferedBytes;
  }

  /**
   * The hard ceiling for requests already admitted: 1.25 × MAX_BUFFERED_BYTES. Admission stops at
   * the bound itself; the quarter above it lets work admitted just under the bound finish, while a
   * worker streaming into many admitted requests can no longer grow the total without limit.
   */
  get ceiling(): number {
    return this.config.maxBufferedBytes * 1.25;
  }

  /**
   * Whether `bytes` more for this request still fit under the ceiling: `request` when this request
   * alone would pass it (retrying cannot help), `total` when all requests together would (it can).
   */
  overCeiling(req: RelayRequest, bytes: number): 'request' | 'total' | undefined {
    if (this.total + bytes <= this.ceiling) return undefined;
    return req.heldBytes + bytes > this.ceiling ? 'request' : 'total';
  }

  /** Keeps a chunk of a non-streaming body until the completion (counted in the total). */
  collect(req: RelayRequest, chunk: string, bytes: number): void {
    (req.bufferedBody ??= []).push(chunk);
    req.heldBytes += bytes;
    this.total += bytes;
  }

  /** Forgets a collected body (sent, failed or requeued). */
  dropBody(req: RelayRequest): void {
    if (req.isStreaming) return;
    req.bufferedBody = undefined;
    if (req.backedUp) return; // what is held now is the answer on its way to the client
    this.total -= req.heldBytes;
    req.heldBytes = 0;
  }

  /**
   * Writes a stream chunk to the client, unless its unread backlog has no room for it: then false,
   * nothing is written, and the caller cancels the request (`client_too_slow`).
   */
  write(req: RelayRequest, chunk: string, bytes: number): boolean {
    // A backed-up client gets no more either when the total has reached the hard ceiling.
    if (req.backedUp && (req.sink.pendingBytes + bytes > this.config.streamClientBufferBytes || this.total + bytes > this.ceiling)) return false;
    const flowing = req.sink.writeChunk(chunk);
    if (!flowing || req.backedUp) this.hold(req);
    return true;
  }

  /** A whole answer was handed to the client's connection: what it has not taken yet stays counted. */
  sent(req: RelayRequest): void {
    if (req.sink.pendingBytes > 0) this.hold(req);
  }

  /** Counts the client's unread bytes until it drains (or leaves); a client stuck too long is cut off. */
  private hold(req: RelayRequest): void {
    const pending = req.sink.pendingBytes;
    this.total += pending - req.heldBytes;
    req.heldBytes = pending;
    if (req.backedUp) return;
    req.backedUp = true;
    // The sink calls this once on drain, finish or close — also for a response still queued behind
    // another on its connection (no socket of its own yet), whose connection closing is the signal.
    req.sink.onDrain(() => this.drained(req));
    this.armTimer(req);
  }

  /** Watches the client's progress; `stuck` checks whether the connection took any bytes meanwhile. */
  private armTimer(req: RelayRequest): void {
    req.slowClientMark = req.sink.progress;
    req.slowClientTimer = this.clock.setTimeout(() => this.stuck(req), this.config.slowClientTimeoutMs);
  }

  /** Gives the request's counted bytes back; idempotent, so every counted byte leaves exactly once. */
  private drained(req: RelayRequest): void {
    if (!req.backedUp) return;
    req.backedUp = false;
    this.total -= req.heldBytes;
    req.heldBytes = 0;
    if (req.slowClientTimer) {
      this.clock.clearTimeout(req.slowClientTimer);
      req.slowClientTimer = undefined;
    }
  }

  private stuck(req: RelayRequest): void {
    req.slowClientTimer = undefined;
    if (!req.backedUp) return;
    // "Too slow" means no progress for the whole timeout: a client reading a big answer steadily,
    // however slowly, keeps its request (it was cut off after the timeout even while reading).
    const progress = req.sink.progress;
    if (progress !== undefined && progress !== req.slowClientMark) return this.armTimer(req);
    if (req.phase === 'streaming') this.onStuck(req);
    // It has read nothing for the whole timeout: its connection goes, and with it the bytes held for it.
    if (req.backedUp) req.sink.abort();
    // Released here too: a response whose connection never reaches it (queued behind another) emits nothing.
    this.drained(req);
  }
}

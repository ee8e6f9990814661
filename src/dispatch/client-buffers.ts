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
    if (req.backedUp && req.sink.pendingBytes + bytes > this.config.streamClientBufferBytes) return false;
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
    req.sink.onDrain(() => this.drained(req));
    req.slowClientTimer = this.clock.setTimeout(() => this.stuck(req), this.config.slowClientTimeoutMs);
  }

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
    if (req.phase === 'streaming') this.onStuck(req);
    // It has read nothing for the whole timeout: its connection goes, and with it the bytes held for it.
    if (req.backedUp) req.sink.abort();
  }
}

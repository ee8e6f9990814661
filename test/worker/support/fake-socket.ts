import { EventEmitter } from 'node:events';
import WebSocket from 'ws';

/**
 * Just enough of a `ws` client socket for the link's unit specs: frames sent are recorded, the
 * test plays the gateway by emitting 'open', 'message', 'ping' and closing.
 */
export class FakeSocket extends EventEmitter {
  readyState: number = WebSocket.CONNECTING;
  bufferedAmount = 0;
  readonly sent: unknown[] = [];
  readonly closeCalls: Array<{ code?: number; reason?: string }> = [];
  terminated = false;

  constructor(
    readonly url: string,
    readonly options: WebSocket.ClientOptions,
  ) {
    super();
  }

  send(data: string, cb?: () => void): void {
    this.sent.push(JSON.parse(data));
    cb?.();
  }

  /** Records the close handshake; the peer's answer is the test's `closed(...)`. */
  close(code?: number, reason?: string): void {
    this.closeCalls.push({ code, reason });
    this.readyState = WebSocket.CLOSING;
  }

  terminate(): void {
    this.terminated = true;
    this.closed(1006, '');
  }

  /** The gateway accepted the connection. */
  opened(): void {
    this.readyState = WebSocket.OPEN;
    this.emit('open');
  }

  /** A text frame from the gateway. */
  frame(message: unknown): void {
    this.emit('message', Buffer.from(typeof message === 'string' ? message : JSON.stringify(message)), false);
  }

  closed(code: number, reason: string): void {
    if (this.readyState === WebSocket.CLOSED) return;
    this.readyState = WebSocket.CLOSED;
    this.emit('close', code, Buffer.from(reason));
  }

  asWebSocket(): WebSocket {
    return this as unknown as WebSocket;
  }
}

import { connect, Socket } from 'node:net';

/** A raw TCP client of the gateway, for requests no HTTP library would send (slow, oversized). */
export function rawSocket(baseUrl: string): Promise<Socket> {
  const { hostname, port } = new URL(baseUrl);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname, () => resolve(socket));
    socket.once('error', reject);
  });
}

export interface RawOutcome {
  /** Everything the server sent before the connection ended. */
  text: string;
  /** Milliseconds from the call until the connection closed. */
  closedAfterMs: number;
  /** A socket error (EPIPE, ECONNRESET) seen while writing or reading, if any. */
  error?: string;
}

/** Collects what the server sends until it closes the connection (or `timeoutMs` passes). */
export function readUntilClosed(socket: Socket, timeoutMs = 20_000): Promise<RawOutcome> {
  const started = Date.now();
  let text = '';
  let error: string | undefined;
  socket.setEncoding('latin1');
  socket.on('data', (d: string) => (text += d));
  socket.on('error', (e: NodeJS.ErrnoException) => (error ??= e.code ?? e.message));
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      socket.destroy();
      resolve({ text, closedAfterMs: Infinity, error });
    }, timeoutMs);
    socket.once('close', () => {
      clearTimeout(timer);
      resolve({ text, closedAfterMs: Date.now() - started, error });
    });
  });
}

/** The status code of the first response in raw HTTP/1.1 text (undefined when none arrived). */
export function statusOf(text: string): number | undefined {
  const m = /^HTTP\/1\.1 (\d{3})/.exec(text);
  return m ? Number(m[1]) : undefined;
}

/** Headers (lowercased names) and body of the first response in raw HTTP/1.1 text. */
export function parseRaw(text: string): { status?: number; headers: Record<string, string>; body: string } {
  const end = text.indexOf('\r\n\r\n');
  const head = end >= 0 ? text.slice(0, end) : text;
  const headers: Record<string, string> = {};
  for (const line of head.split('\r\n').slice(1)) {
    const i = line.indexOf(':');
    if (i > 0) headers[line.slice(0, i).trim().toLowerCase()] = line.slice(i + 1).trim();
  }
  return { status: statusOf(text), headers, body: end >= 0 ? text.slice(end + 4) : '' };
}

import type { Server } from 'node:http';
import type { Socket } from 'node:net';
import { Errors } from '../common/gateway-error';
import { dialectOf, errorBody } from '../common/error-dialect';

/** Bytes of a rejected request searched for the offending header (a request head is at most 16 KiB by default). */
const MAX_SCAN = 64 * 1024;

/**
 * A header value with CR, LF, NUL (or another control character) is refused by Node's HTTP parser before any route sees it (a
 * header-injection attempt, or a client splicing values): without this the answer is Fastify's
 * generic `{"statusCode":400}`, which no SDK reads. Here the refusal is a 400 `invalid_request` in
 * the dialect of the route the request line names, with `param` naming the header. Other parser
 * errors are left to Fastify's handler (it runs after this one and sees the socket already answered
 * only when this one answered).
 */
export function answerBadHeaderCharacters(server: Pick<Server, 'prependListener'>): void {
  server.prependListener('clientError', (err: Error & { code?: string; rawPacket?: Buffer }, socket: Socket) => {
    if (socket.destroyed || !socket.writable || !err.rawPacket) return;
    // As Node's own handler: never write into a response already under way on this connection.
    const inFlight = (socket as Socket & { _httpMessage?: { headersSent?: boolean } })._httpMessage;
    if (inFlight?.headersSent) return;
    const found = offendingHeader(err.rawPacket.subarray(0, MAX_SCAN).toString('latin1'));
    if (!found) return;
    const error = Errors.invalidRequest(
      `Header '${found.header}' has a character a header value cannot have (a control character such as CR, LF or NUL)`,
      found.header,
    );
    const body = JSON.stringify(errorBody(dialectOf(found.path), error));
    socket.end(`HTTP/1.1 400 Bad Request\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`);
    socket.destroySoon?.();
  });
}

/** The request path and the first header whose value holds CR, LF, NUL or another control character (tab aside), in a raw request head. */
export function offendingHeader(raw: string): { path: string; header: string } | undefined {
  const end = raw.indexOf('\r\n\r\n');
  const head = end >= 0 ? raw.slice(0, end) : raw;
  const lines = head.split('\r\n');
  const path = /^[A-Z]+ (\S+) HTTP\//.exec(lines[0] ?? '')?.[1] ?? '/';
  let previous: string | undefined;
  for (const line of lines.slice(1)) {
    // A line starting with a space or tab continues the previous value (obs-fold): a CRLF inside it.
    if ((line.startsWith(' ') || line.startsWith('\t')) && previous !== undefined) return found(path, previous);
    const colon = line.indexOf(':');
    if (colon <= 0) continue;
    previous = line.slice(0, colon);
    if (/[\x00-\x08\x0a-\x1f\x7f]/.test(line.slice(colon + 1))) return found(path, previous);
  }
  return undefined;
}

function found(path: string, rawName: string): { path: string; header: string } {
  const name = rawName.trim().toLowerCase();
  // The name is echoed: only a plain token (bounded) is, never the bytes that broke the request.
  return { path: path.split('?')[0], header: /^[!#$%&'*+.^_`|~0-9a-z-]{1,64}$/.test(name) ? name : 'header' };
}

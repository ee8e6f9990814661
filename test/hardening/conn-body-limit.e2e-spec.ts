import { startGateway, TestGateway } from '../support/gateway';
import { parseRaw, rawSocket, readUntilClosed } from './conn-support';

const LIMIT = 1024 * 1024;

/**
 * Writes a request announcing `size` body bytes and sends them as a client library does: all at
 * once, or in 64 KiB pieces as its buffer drains (the client is still writing when the answer comes).
 */
async function oversized(gw: TestGateway, path: string, size: number, pieces: boolean) {
  const socket = await rawSocket(gw.url);
  const outcome = readUntilClosed(socket);
  socket.write(`POST ${path} HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: ${size}\r\n\r\n`);
  if (!pieces) socket.write(Buffer.alloc(size, 0x61), () => undefined);
  else {
    void (async () => {
      for (let sent = 0; sent < size && !socket.destroyed; sent += 65536) {
        if (!socket.write(Buffer.alloc(65536, 0x61), () => undefined)) await new Promise((r) => socket.once('drain', r).once('close', r));
        await new Promise((r) => setImmediate(r));
      }
    })();
  }
  return outcome;
}

describe('conn: a body over MAX_BODY_BYTES with a content-length', () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startGateway({ MAX_BODY_BYTES: String(LIMIT) });
  });
  afterAll(() => gw.close());

  it('is answered 413 in the dialect with connection: close, and the client reads it every time (no EPIPE or reset)', async () => {
    for (let i = 0; i < 40; i++) {
      const path = i % 2 === 0 ? '/v1/chat/completions' : '/v1/messages';
      const size = i % 4 < 2 ? 2 * LIMIT : 3 * LIMIT;
      const pieces = i % 8 < 4;
      const { text, error, closedAfterMs } = await oversized(gw, path, size, pieces);
      const res = parseRaw(text);
      expect({ i, size, pieces, status: res.status, error }).toEqual({ i, size, pieces, status: 413, error: undefined });
      expect(closedAfterMs).toBeLessThan(15_000);
      expect(res.headers.connection).toBe('close');
      const body = JSON.parse(res.body);
      if (path === '/v1/messages') expect(body).toMatchObject({ type: 'error', error: { type: 'request_too_large', code: 'payload_too_large' } });
      else expect(body).toMatchObject({ error: { code: 'payload_too_large', type: 'invalid_request_error' } });
    }
  });

  it('still closes a client that keeps sending far beyond the limit (the discard is bounded)', async () => {
    const socket = await rawSocket(gw.url);
    const outcome = readUntilClosed(socket);
    socket.write(`POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: ${1024 * LIMIT}\r\n\r\n`);
    // Keeps writing until the server stops reading and closes: it must not read a GiB for us.
    let sent = 0;
    const chunk = Buffer.alloc(64 * 1024, 0x61);
    const pump = async () => {
      while (!socket.destroyed && sent < 1024 * LIMIT) {
        sent += chunk.length;
        if (!socket.write(chunk)) await new Promise((r) => socket.once('drain', r).once('close', r));
      }
    };
    void pump();
    const { text, closedAfterMs } = await outcome;
    expect(parseRaw(text).status).toBe(413);
    expect(closedAfterMs).toBeLessThan(15_000);
    expect(sent).toBeLessThan(64 * LIMIT);
  });
});

import type { ResponseChunkMessage } from './messages';

/** How the worker daemon writes a chunk frame (`JSON.stringify` of type, request_id, chunk, in that order). */
const HEAD = '{"type":"response_chunk","request_id":"';
const CHUNK_KEY = '","chunk":';
/** What a JSON string holds only escaped (control characters) or what starts an escape. */
const NOT_PLAIN = /[\x00-\x1f\\]/;

/**
 * A `response_chunk` frame in exactly the daemon's layout, read without parsing the whole frame into
 * an object: only the chunk's string literal goes through `JSON.parse` (a stream sends one such frame
 * per backend chunk, and their parsing was the largest item of a relayed stream after socket writes).
 * Anything else — other frames, other key orders, extra keys, an escaped request id, invalid JSON —
 * returns undefined and is parsed as before, so the result is always what the full parse gives.
 */
export function readChunkFrame(text: string): ResponseChunkMessage | undefined {
  if (!text.startsWith(HEAD) || text.charCodeAt(text.length - 1) !== 0x7d /* } */) return undefined;
  const idEnd = text.indexOf('"', HEAD.length);
  if (idEnd < 0 || !text.startsWith(CHUNK_KEY, idEnd)) return undefined;
  const requestId = text.slice(HEAD.length, idEnd);
  // An id with escapes (or characters JSON.parse would refuse) is left to the full parse.
  if (NOT_PLAIN.test(requestId)) return undefined;
  let chunk: unknown;
  try {
    // One string literal (JSON allows whitespace around it) and nothing else, or it throws.
    chunk = JSON.parse(text.slice(idEnd + CHUNK_KEY.length, -1));
  } catch {
    return undefined;
  }
  return typeof chunk === 'string' ? { type: 'response_chunk', request_id: requestId, chunk } : undefined;
}

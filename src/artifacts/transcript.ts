/** A transcript cut to its size bound. */
export interface BoundedTranscript {
  text: string;
  /** UTF-8 bytes of `text`. */
  bytes: number;
  /** UTF-8 bytes of the transcript as the task produced it. */
  originalBytes: number;
  truncated: boolean;
}

const EVENT_END = Buffer.from('\n\n');

/**
 * Bounds an SSE transcript to `maxBytes` without failing the record: a longer one keeps its head
 * and its tail (the `started` and the `end` or `error` events, which say the most), cut at event
 * boundaries where there are any, and says in between, as an SSE comment, how much is missing —
 * so the result is still a well-formed event stream. NUL characters, which PostgreSQL text cannot
 * hold, become U+FFFD first.
 */
export function boundTranscript(transcript: string, maxBytes: number): BoundedTranscript {
  const text = transcript.includes('\u0000') ? transcript.replace(/\u0000/g, '\uFFFD') : transcript;
  const all = Buffer.from(text, 'utf8');
  if (all.length <= maxBytes) return { text, bytes: all.length, originalBytes: all.length, truncated: false };

  const marker = (omitted: number) => `: transcript truncated, ${omitted} bytes omitted\n\n`;
  // The marker with the widest number it can hold: what remains is the budget for head and tail.
  const budget = Math.max(0, maxBytes - Buffer.byteLength(`\n\n${marker(all.length)}`));
  const headLimit = Math.floor(budget / 2);
  const tailLimit = budget - headLimit;

  let headEnd = all.subarray(0, headLimit).lastIndexOf(EVENT_END);
  headEnd = headEnd >= 0 ? headEnd + EVENT_END.length : utf8StartAtOrBefore(all, headLimit);
  const tailFrom = all.length - tailLimit;
  const boundary = all.indexOf(EVENT_END, tailFrom);
  const tailStart = boundary >= 0 && boundary + EVENT_END.length < all.length ? boundary + EVENT_END.length : utf8StartAtOrAfter(all, tailFrom);

  const head = all.subarray(0, headEnd).toString('utf8');
  const tail = all.subarray(tailStart).toString('utf8');
  // A head cut inside an event ends that event first, so the comment stands on its own.
  const separator = head === '' || head.endsWith('\n\n') ? '' : '\n\n';
  const result = `${head}${separator}${marker(tailStart - headEnd)}${tail}`;
  return { text: result, bytes: Buffer.byteLength(result, 'utf8'), originalBytes: all.length, truncated: true };
}

/** Whether byte `i` continues a multi-byte UTF-8 character (cutting there would split it). */
function continues(bytes: Buffer, i: number): boolean {
  return i < bytes.length && (bytes[i] & 0xc0) === 0x80;
}

function utf8StartAtOrBefore(bytes: Buffer, i: number): number {
  let at = i;
  while (at > 0 && continues(bytes, at)) at--;
  return at;
}

function utf8StartAtOrAfter(bytes: Buffer, i: number): number {
  let at = i;
  while (continues(bytes, at)) at++;
  return at;
}

export interface SseEvent {
  event?: string;
  data: string;
  /** The raw text of the event block (without the blank line). */
  raw: string;
}

/** Splits an SSE body into events (comment-only blocks are skipped). */
export function parseSse(text: string): SseEvent[] {
  const events: SseEvent[] = [];
  for (const block of text.replace(/\r\n/g, '\n').split('\n\n')) {
    if (block.trim() === '') continue;
    let event: string | undefined;
    const data: string[] = [];
    for (const line of block.split('\n')) {
      if (line.startsWith(':')) continue;
      const idx = line.indexOf(':');
      const field = idx === -1 ? line : line.slice(0, idx);
      let value = idx === -1 ? '' : line.slice(idx + 1);
      if (value.startsWith(' ')) value = value.slice(1);
      if (field === 'event') event = value;
      else if (field === 'data') data.push(value);
    }
    if (event === undefined && data.length === 0) continue;
    events.push({ event, data: data.join('\n'), raw: block });
  }
  return events;
}

/**
 * The error object of an SSE `error` event payload: the minimal `{code, retriable, ...}` form or
 * the same fields inside a dialect envelope (`{"error":{...}}` / `{"type":"error","error":{...}}`).
 */
export function sseErrorPayload(data: string): { code?: unknown; retriable?: unknown; message?: unknown } {
  const parsed = JSON.parse(data);
  return parsed?.code !== undefined ? parsed : (parsed?.error ?? {});
}

/** The error code carried by an SSE error payload. */
export function sseErrorCode(data: string): unknown {
  return sseErrorPayload(data).code;
}

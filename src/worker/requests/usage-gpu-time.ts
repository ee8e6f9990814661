/**
 * Streams carry the backend's processing time in their final usage (X-GPU-Time-Ms cannot be a
 * header: a stream's headers go out first). The usage object of a stream's closing event gets a
 * `gpu_time_ms` member: OpenAI chat/completions (the chunk with a non-null `usage`), Responses
 * (`response.completed`), Anthropic (`message_delta`; not `message_start`, whose usage is the
 * prompt's, sent before any work). Only the chunk's last usage object, opened within the chunk, is rewritten: `"usage":{`
 * with unescaped quotes can only be a key (inside a JSON string the quotes would be escaped), so
 * model text is never touched. Anything else passes unchanged.
 */
const USAGE_OPEN = '"usage":{';
const FIRST_EVENT = '"type":"message_start"';

export function withGpuTime(chunk: string, gpuTimeMs: number): string {
  // The last usage of the chunk (a read may hold several events, even a whole short stream).
  const at = chunk.lastIndexOf(USAGE_OPEN);
  if (at < 0) return chunk;
  const eventStart = chunk.lastIndexOf('\n\n', at);
  if (chunk.slice(eventStart < 0 ? 0 : eventStart, at).includes(FIRST_EVENT)) return chunk;
  const insertAt = at + USAGE_OPEN.length;
  const empty = chunk[insertAt] === '}';
  const member = `"gpu_time_ms":${Math.max(0, Math.round(gpuTimeMs))}${empty ? '' : ','}`;
  return chunk.slice(0, insertAt) + member + chunk.slice(insertAt);
}

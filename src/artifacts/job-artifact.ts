import { REDACTED } from '../observability/redaction';
import {
  ARTIFACT_ID_PATTERN,
  ArtifactWrite,
  JOB_ID_PATTERN,
  JOB_KIND,
  JsonObject,
  MAX_PARENTS,
  MAX_TAGS,
  newRecord,
  SESSION_ID_PATTERN,
  TAG_PATTERN,
} from './artifact-record';
import { canonicalJson, sha256Hex } from '../common/canonical-json';
import type { JobArtifactInput } from './job-artifacts.port';
import { boundTranscript } from './transcript';

/** Request fields that carry the prompt: never stored, at whatever depth they appear. */
export const PROMPT_FIELDS: ReadonlySet<string> = new Set(['messages', 'prompt', 'input', 'system']);
const MAX_ERROR_MESSAGE = 2048;

export interface JobArtifactLimits {
  /** Request params whose canonical JSON is larger are left out (their size is kept). */
  maxBytes: number;
  inlineTranscriptBytes: number;
  maxTranscriptBytes: number;
}

/**
 * The artifact of a finished task (kind `job`), built synchronously so its id can be answered at
 * once. Never throws on odd input: what a column cannot hold stays in the content only, tags and
 * parents that are not well-formed are left out, an oversized transcript is cut (see
 * `boundTranscript`) and stored beside the artifact when it is too large to sit inline.
 */
export function buildJobArtifact(input: JobArtifactInput, limits: JobArtifactLimits): ArtifactWrite {
  const transcript = boundTranscript(input.transcript ?? '', limits.maxTranscriptBytes);
  const inline = transcript.bytes <= limits.inlineTranscriptBytes;
  const params = redactPrompt(input.params ?? {}) as JsonObject;
  const paramsJson = canonicalJson(params);
  const paramsBytes = Buffer.byteLength(paramsJson, 'utf8');
  const tooLarge = paramsBytes > limits.maxBytes;
  const content: JsonObject = {
    job_id: input.jobId,
    session_id: input.sessionId,
    status: input.status,
    model_ref: input.modelRef,
    pool: input.pool,
    // Always present (spec §9): null when unknown.
    engine: input.engine ?? null,
    engine_version: input.engineVersion ?? null,
    seed: input.seed,
    output_mode: input.outputMode,
    params: tooLarge ? null : params,
    params_omitted_bytes: tooLarge ? paramsBytes : undefined,
    max_tokens: input.maxTokens,
    ctx: input.ctx ?? null,
    tokens_out: input.tokensOut,
    decode_time_ms: input.decodeTimeMs,
    error: input.error && {
      code: input.error.code,
      message: input.error.message.length > MAX_ERROR_MESSAGE ? `${input.error.message.slice(0, MAX_ERROR_MESSAGE)}…` : input.error.message,
      retriable: input.error.retriable,
    },
    transcript: {
      storage: inline ? 'inline' : 'separate',
      bytes: transcript.bytes,
      sha256: sha256Hex(transcript.text),
      truncated: transcript.truncated,
      original_bytes: transcript.truncated ? transcript.originalBytes : undefined,
      text: inline ? transcript.text : undefined,
    },
  };
  const tags = [...(input.tags ?? []), ...(input.outputMode ? [`output_mode:${input.outputMode}`] : [])].filter((t) => TAG_PATTERN.test(t));
  const record = newRecord(
    {
      kind: JOB_KIND,
      sessionId: input.sessionId && SESSION_ID_PATTERN.test(input.sessionId) ? input.sessionId : null,
      tags: [...new Set(tags)].slice(0, MAX_TAGS),
      parents: [...new Set((input.parents ?? []).filter((p) => ARTIFACT_ID_PATTERN.test(p)))].slice(0, MAX_PARENTS),
      // What a listing shows of a job without its content.
      metadata: { status: input.status, model_ref: input.modelRef, tokens_out: input.tokensOut, error_code: input.error?.code },
      content,
    },
    { tenant: input.tenant, jobId: JOB_ID_PATTERN.test(input.jobId) ? input.jobId : null, createdAt: input.createdAt },
  );
  return inline ? { record } : { record, transcript: { text: transcript.text } };
}

/** A copy of `value` in which every `messages`, `prompt`, `input` and `system` value is `[redacted]`. */
export function redactPrompt(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(redactPrompt);
  if (!value || typeof value !== 'object') return value;
  const out: JsonObject = {};
  for (const [key, v] of Object.entries(value as JsonObject)) out[key] = PROMPT_FIELDS.has(key) ? REDACTED : redactPrompt(v);
  return out;
}

import { REDACTED } from '../observability/redaction';
import { artifactId } from './artifact-record';
import { sha256Hex } from '../common/canonical-json';
import { buildJobArtifact, redactPrompt } from './job-artifact';
import type { JobArtifactInput } from './job-artifacts.port';

const LIMITS = { maxBytes: 64 * 1024, inlineTranscriptBytes: 1024, maxTranscriptBytes: 8192 };
const SMALL = 'id: 1\nevent: started\ndata: {"queue_position":0}\n\nid: 2\nevent: end\ndata: {"tokens_out":0}\n\n';

function job(overrides: Partial<JobArtifactInput> = {}): JobArtifactInput {
  return {
    jobId: 'task-1',
    sessionId: 'sess-1',
    tenant: 'team-a',
    params: { model: 'llama3:8b', max_tokens: 32, temperature: 0.3 },
    maxTokens: 32,
    ctx: 4096,
    engine: 'vllm',
    engineVersion: '0.6.3',
    modelRef: 'llama3:8b',
    pool: 'local',
    seed: 7,
    status: 'completed',
    tokensOut: 12,
    decodeTimeMs: 340,
    transcript: SMALL,
    createdAt: 1_700_000_000_000,
    ...overrides,
  };
}

describe('redactPrompt', () => {
  it('replaces messages, prompt, input and system at any depth and keeps everything else', () => {
    const params = {
      model: 'm',
      messages: [{ role: 'user', content: 'secret' }],
      prompt: 'secret',
      input: ['secret'],
      system: 'secret',
      temperature: 0.2,
      extra: { nested: { prompt: 'secret', keep: 1 }, list: [{ system: 'secret' }] },
    };
    expect(redactPrompt(params)).toEqual({
      model: 'm',
      messages: REDACTED,
      prompt: REDACTED,
      input: REDACTED,
      system: REDACTED,
      temperature: 0.2,
      extra: { nested: { prompt: REDACTED, keep: 1 }, list: [{ system: REDACTED }] },
    });
    expect(JSON.stringify(redactPrompt(params))).not.toContain('secret');
    // The caller's object is left alone.
    expect(params.prompt).toBe('secret');
  });
});

describe('buildJobArtifact', () => {
  it('records what the task was, how it ended and its transcript, with the prompt redacted even when the caller forgot', () => {
    const { record, transcript } = buildJobArtifact(job({ params: { model: 'llama3:8b', messages: [{ role: 'user', content: 'CANARY' }] } }), LIMITS);
    expect(transcript).toBeUndefined();
    expect(record).toMatchObject({ kind: 'job', tenant: 'team-a', jobId: 'task-1', sessionId: 'sess-1', createdAt: 1_700_000_000_000 });
    expect(record.metadata).toEqual({ status: 'completed', model_ref: 'llama3:8b', tokens_out: 12 });
    expect(record.content).toEqual({
      job_id: 'task-1',
      session_id: 'sess-1',
      status: 'completed',
      model_ref: 'llama3:8b',
      pool: 'local',
      engine: 'vllm',
      engine_version: '0.6.3',
      seed: 7,
      params: { model: 'llama3:8b', messages: REDACTED },
      max_tokens: 32,
      ctx: 4096,
      tokens_out: 12,
      decode_time_ms: 340,
      transcript: { storage: 'inline', bytes: Buffer.byteLength(SMALL), sha256: sha256Hex(SMALL), truncated: false, text: SMALL },
    });
    expect(JSON.stringify(record)).not.toContain('CANARY');
    expect(record.id).toBe(artifactId(record));
  });

  it('keeps the error context of a failed task, and tags the output mode', () => {
    const { record } = buildJobArtifact(
      job({
        status: 'failed',
        outputMode: 'json',
        tags: ['batch-7'],
        error: { code: 'worker_disconnected', message: 'The worker disconnected during the response', retriable: true },
      }),
      LIMITS,
    );
    expect(record.content).toMatchObject({
      status: 'failed',
      output_mode: 'json',
      error: { code: 'worker_disconnected', message: 'The worker disconnected during the response', retriable: true },
    });
    expect(record.metadata).toMatchObject({ status: 'failed', error_code: 'worker_disconnected' });
    expect(record.tags).toEqual(['batch-7', 'output_mode:json']);
  });

  it('stores a transcript above the inline size beside the content, which keeps its size and hash', () => {
    const large = Array.from({ length: 40 }, (_, i) => `id: ${i}\nevent: token\ndata: {"t":"word ${i}","i":${i}}\n\n`).join('');
    expect(Buffer.byteLength(large)).toBeGreaterThan(LIMITS.inlineTranscriptBytes);
    const { record, transcript } = buildJobArtifact(job({ transcript: large }), LIMITS);
    expect(transcript).toEqual({ text: large });
    expect((record.content as { transcript: unknown }).transcript).toEqual({
      storage: 'separate',
      bytes: Buffer.byteLength(large),
      sha256: sha256Hex(large),
      truncated: false,
    });
    // The id covers the transcript through its hash.
    expect(buildJobArtifact(job({ transcript: `${large}: x\n\n` }), LIMITS).record.id).not.toBe(record.id);
  });

  it('truncates an oversized transcript (marker, original size) instead of failing the record', () => {
    const huge = Array.from({ length: 2000 }, (_, i) => `id: ${i}\nevent: token\ndata: {"t":"w","i":${i}}\n\n`).join('');
    const { record, transcript } = buildJobArtifact(job({ transcript: huge }), LIMITS);
    expect(transcript!.text.length).toBeLessThanOrEqual(LIMITS.maxTranscriptBytes);
    expect(transcript!.text).toContain(': transcript truncated,');
    expect((record.content as { transcript: unknown }).transcript).toMatchObject({
      storage: 'separate',
      truncated: true,
      original_bytes: Buffer.byteLength(huge),
      sha256: sha256Hex(transcript!.text),
    });
  });

  it('never fails on odd input: bad tags and parents are left out, ids a column cannot hold stay in the content only, huge params become their size', () => {
    const { record } = buildJobArtifact(
      job({
        jobId: 'x'.repeat(300),
        sessionId: 'has spaces',
        tags: ['ok', 'not ok'],
        parents: ['a'.repeat(64), 'nope'],
        params: { blob: 'z'.repeat(LIMITS.maxBytes) },
        error: { code: 'worker_error', message: 'm'.repeat(10_000) },
      }),
      LIMITS,
    );
    expect(record.jobId).toBeNull();
    expect(record.sessionId).toBeNull();
    expect(record.tags).toEqual(['ok']);
    expect(record.parents).toEqual(['a'.repeat(64)]);
    const content = record.content as Record<string, any>;
    expect(content.job_id).toBe('x'.repeat(300));
    expect(content.session_id).toBe('has spaces');
    expect(content.params).toBeNull();
    expect(content.params_omitted_bytes).toBeGreaterThan(LIMITS.maxBytes);
    expect(content.error.message.length).toBeLessThan(2100);
  });

  it('records ctx, engine and engine_version as null when the task did not know them, never leaves them out', () => {
    const { ctx: _ctx, engine: _engine, engineVersion: _version, ...unknown } = job();
    expect(buildJobArtifact(unknown, LIMITS).record.content).toMatchObject({ ctx: null, engine: null, engine_version: null });
    expect(buildJobArtifact(job({ ctx: null, engine: null, engineVersion: null }), LIMITS).record.content).toMatchObject({
      ctx: null,
      engine: null,
      engine_version: null,
    });
  });

  it('the same finished task gives the same id; another task, another id', () => {
    expect(buildJobArtifact(job(), LIMITS).record.id).toBe(buildJobArtifact(job({ createdAt: 5 }), LIMITS).record.id);
    expect(buildJobArtifact(job({ jobId: 'task-2' }), LIMITS).record.id).not.toBe(buildJobArtifact(job(), LIMITS).record.id);
  });
});

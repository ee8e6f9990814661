import { Env, Reader, TIMER } from '../../common/config-reader';

/** The `artifacts:` section of the config file: the artifact registry (see docs/artifacts.md). */
export interface ArtifactsConfig {
  /** `POST /v1/artifacts` bodies (and a content's canonical JSON) above this are refused with 413. */
  maxBytes: number;
  /** A job's transcript up to this size sits inline in its content; a larger one is stored beside it. */
  inlineTranscriptBytes: number;
  /** A job's transcript is cut (head and tail kept, a marker between) to at most this. */
  maxTranscriptBytes: number;
  /** Artifacts older than this are deleted by the cleanup job; 0 = kept forever. */
  retentionMs: number;
  /** Job artifacts wait in memory at most this long before they are written. */
  flushIntervalMs: number;
  /** Job artifacts held in memory at most (bytes); past it the oldest are dropped (and counted). */
  bufferBytes: number;
  /** Bytes of artifacts one tenant may have stored; a `POST /v1/artifacts` past it is refused (413 artifact_quota_exceeded). 0 = no quota. */
  maxBytesPerTenant: number;
}

const DAY_SECS = 24 * 3600;
const KEYS = ['max_bytes', 'inline_transcript_bytes', 'max_transcript_bytes', 'retention_days', 'flush_interval_secs', 'buffer_bytes', 'max_bytes_per_tenant'];
/** Room for a truncation marker and something on either side of it. */
export const MIN_TRANSCRIPT_BYTES = 1024;

export function readArtifactsConfig(env: Env, section: unknown, problems: string[]): ArtifactsConfig {
  const yaml = section && typeof section === 'object' && !Array.isArray(section) ? (section as Record<string, unknown>) : {};
  if (section !== undefined && section !== null && yaml !== section) problems.push('artifacts (config file) must be a mapping');
  const r = new Reader(env, yaml, 'artifacts', KEYS);
  const retentionDays = r.number('ARTIFACTS_RETENTION_DAYS', 'retention_days', 30, { min: 0 });
  const config: ArtifactsConfig = {
    maxBytes: r.number('ARTIFACTS_MAX_BYTES', 'max_bytes', 1024 * 1024, { min: 1024, integer: true }),
    inlineTranscriptBytes: r.number('ARTIFACTS_INLINE_TRANSCRIPT_BYTES', 'inline_transcript_bytes', 64 * 1024, { min: 0, integer: true }),
    maxTranscriptBytes: r.number('ARTIFACTS_MAX_TRANSCRIPT_BYTES', 'max_transcript_bytes', 4 * 1024 * 1024, { min: MIN_TRANSCRIPT_BYTES, integer: true }),
    retentionMs: Math.round(retentionDays * DAY_SECS * 1000),
    flushIntervalMs: r.seconds('ARTIFACTS_FLUSH_INTERVAL_SECS', 'flush_interval_secs', 1, TIMER),
    bufferBytes: r.number('ARTIFACTS_BUFFER_BYTES', 'buffer_bytes', 64 * 1024 * 1024, { min: 1, integer: true }),
    maxBytesPerTenant: r.number('ARTIFACTS_MAX_BYTES_PER_TENANT', 'max_bytes_per_tenant', 1024 * 1024 * 1024, { min: 0, integer: true }),
  };
  if (config.bufferBytes < config.maxTranscriptBytes && !r.problems.length) {
    problems.push(`ARTIFACTS_BUFFER_BYTES (${config.bufferBytes}) must be at least ARTIFACTS_MAX_TRANSCRIPT_BYTES (${config.maxTranscriptBytes})`);
  }
  for (const key of r.unknownKeys()) problems.push(`artifacts.${key} (config file) is not an artifacts setting (known: ${KEYS.join(', ')})`);
  problems.push(...r.problems);
  return config;
}

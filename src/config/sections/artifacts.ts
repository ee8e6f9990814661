import { Env, Reader, TIMER } from '../../common/config-reader';
import { group, num, read, secs, yamlKeys } from '../setting';

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
/** Room for a truncation marker and something on either side of it. */
export const MIN_TRANSCRIPT_BYTES = 1024;

export const ARTIFACTS_SETTINGS = group('artifacts', 'artifacts', {
  maxBytes: num({
    env: 'ARTIFACTS_MAX_BYTES',
    yaml: 'max_bytes',
    default: 1024 * 1024,
    opts: { min: 1024, integer: true },
    reload: 'restart',
    fields: ['maxBytes'],
    doc: "[artifacts](artifacts.md): `POST /v1/artifacts` bodies (and a content's canonical JSON) above this answer `413 payload_too_large` (at least 1024)",
  }),
  inlineTranscriptBytes: num({
    env: 'ARTIFACTS_INLINE_TRANSCRIPT_BYTES',
    yaml: 'inline_transcript_bytes',
    default: 64 * 1024,
    opts: { min: 0, integer: true },
    reload: 'restart',
    fields: ['inlineTranscriptBytes'],
    doc: "a job artifact's SSE transcript up to this size sits inline in its content; a larger one is stored in its own row (`GET /v1/artifacts/:id/transcript`)",
  }),
  maxTranscriptBytes: num({
    env: 'ARTIFACTS_MAX_TRANSCRIPT_BYTES',
    yaml: 'max_transcript_bytes',
    default: 4 * 1024 * 1024,
    opts: { min: MIN_TRANSCRIPT_BYTES, integer: true },
    reload: 'restart',
    fields: ['maxTranscriptBytes'],
    doc: 'job transcripts above this are cut (head and tail kept, a marker between), never refused (at least 1024)',
  }),
  retentionDays: num({
    env: 'ARTIFACTS_RETENTION_DAYS',
    yaml: 'retention_days',
    default: 30,
    opts: { min: 0 },
    reload: 'restart',
    fields: ['retentionMs'],
    doc: 'artifacts older than this are deleted by the cleanup job; fractions allowed; `0` = keep forever',
  }),
  flushInterval: secs({
    env: 'ARTIFACTS_FLUSH_INTERVAL_SECS',
    yaml: 'flush_interval_secs',
    default: 1,
    opts: TIMER,
    reload: 'restart',
    fields: ['flushIntervalMs'],
    doc: 'job artifacts are buffered in memory and written in one transaction on this period (sooner when 100 artifacts or 8 MiB wait)',
  }),
  bufferBytes: num({
    env: 'ARTIFACTS_BUFFER_BYTES',
    yaml: 'buffer_bytes',
    default: 64 * 1024 * 1024,
    opts: { min: 1, integer: true },
    reload: 'restart',
    fields: ['bufferBytes'],
    doc: 'memory for job artifacts waiting to be written; when the database falls behind, the oldest are dropped and counted (`switchboard_artifacts_dropped_total`). At least `ARTIFACTS_MAX_TRANSCRIPT_BYTES`',
  }),
  maxBytesPerTenant: num({
    env: 'ARTIFACTS_MAX_BYTES_PER_TENANT',
    yaml: 'max_bytes_per_tenant',
    default: 1024 * 1024 * 1024,
    opts: { min: 0, integer: true },
    reload: 'restart',
    fields: ['maxBytesPerTenant'],
    doc: 'bytes of artifacts one tenant may have stored; a `POST /v1/artifacts` that would pass it answers `413 artifact_quota_exceeded`; `0` = no quota',
  }),
});
const S = ARTIFACTS_SETTINGS.settings;
const KEYS = yamlKeys(ARTIFACTS_SETTINGS);

export function readArtifactsConfig(env: Env, section: unknown, problems: string[]): ArtifactsConfig {
  const yaml = section && typeof section === 'object' && !Array.isArray(section) ? (section as Record<string, unknown>) : {};
  if (section !== undefined && section !== null && yaml !== section) problems.push('artifacts (config file) must be a mapping');
  const r = new Reader(env, yaml, 'artifacts', KEYS);
  const retentionDays = read(r, env, S.retentionDays);
  const config: ArtifactsConfig = {
    maxBytes: read(r, env, S.maxBytes),
    inlineTranscriptBytes: read(r, env, S.inlineTranscriptBytes),
    maxTranscriptBytes: read(r, env, S.maxTranscriptBytes),
    retentionMs: Math.round(retentionDays * DAY_SECS * 1000),
    flushIntervalMs: read(r, env, S.flushInterval),
    bufferBytes: read(r, env, S.bufferBytes),
    maxBytesPerTenant: read(r, env, S.maxBytesPerTenant),
  };
  if (config.bufferBytes < config.maxTranscriptBytes && !r.problems.length) {
    problems.push(`ARTIFACTS_BUFFER_BYTES (${config.bufferBytes}) must be at least ARTIFACTS_MAX_TRANSCRIPT_BYTES (${config.maxTranscriptBytes})`);
  }
  for (const key of r.unknownKeys()) problems.push(`artifacts.${key} (config file) is not an artifacts setting (known: ${KEYS.join(', ')})`);
  problems.push(...r.problems);
  return config;
}

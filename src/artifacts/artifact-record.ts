import { canonicalJson, sha256Hex } from '../common/canonical-json';

/** The kind of the artifact the gateway records for every finished task; clients cannot post it. */
export const JOB_KIND = 'job';

/** Lower-case name, 1-32 characters: `plan`, `summary`, `diff`, `trace`, … */
export const KIND_PATTERN = /^[a-z][a-z0-9_-]{0,31}$/;
/** What a tag may be: 1-128 characters, no spaces; `output_mode:json`, `team=a`, `v1.2`. */
export const TAG_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._:/=+@-]{0,127}$/;
/** Session ids as the artifact columns hold them (the task API's may be used as they are). */
export const SESSION_ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$/;
/** A job id as its column holds it. */
export const JOB_ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$/;
/** An artifact id: SHA-256, lower-case hex. */
export const ARTIFACT_ID_PATTERN = /^[0-9a-f]{64}$/;
export const MAX_TAGS = 32;
export const MAX_PARENTS = 32;

export type JsonObject = Record<string, unknown>;

/** The part of an artifact its id is computed from (see `artifactId`). */
export interface ArtifactIdentity {
  kind: string;
  sessionId: string | null;
  /** Sorted, without duplicates (see `normalizedSet`). */
  tags: string[];
  /** Sorted, without duplicates. */
  parents: string[];
  metadata: JsonObject;
  content: unknown;
}

/** One stored artifact: its identity, its id and what the registry adds. */
export interface ArtifactRecord extends ArtifactIdentity {
  id: string;
  tenant: string;
  /** The task's id, for `job` artifacts. */
  jobId: string | null;
  /** Bytes of `content` as canonical JSON. */
  size: number;
  createdAt: number;
}

/** A transcript stored beside its artifact (too large to sit inline in the content). */
export interface StoredTranscript {
  text: string;
}

/** An artifact with the transcript stored apart from it, if any: what one write stores. */
export interface ArtifactWrite {
  record: ArtifactRecord;
  transcript?: StoredTranscript;
}

/** Tags and parents are sets: the order a client lists them in does not change the artifact. */
export function normalizedSet(values: readonly string[]): string[] {
  return [...new Set(values)].sort();
}

/**
 * The content-addressed id: lower-case hex SHA-256 of the canonical JSON (`canonicalJson`) of
 * `{content, kind, metadata, parents, session_id, tags}` (session_id null when absent, tags and
 * parents sorted and deduplicated). The tenant is the namespace ids live in, not part of the id;
 * the creation time, the size and the job id column (a job's content holds its job id) are not
 * hashed either. Identical artifacts have the same id whoever stores them.
 */
export function artifactId(a: ArtifactIdentity): string {
  return sha256Hex(canonicalRecord(a));
}

/** The exact text `artifactId` hashes. */
export function canonicalRecord(a: ArtifactIdentity): string {
  return canonicalJson({
    content: a.content,
    kind: a.kind,
    metadata: a.metadata,
    parents: normalizedSet(a.parents),
    session_id: a.sessionId,
    tags: normalizedSet(a.tags),
  });
}

/**
 * The record of an identity: tags and parents as sets, content and metadata as the JSON they are
 * stored as (members without a value gone), the id and the content's canonical size.
 */
export function newRecord(identity: ArtifactIdentity, extra: { tenant: string; jobId: string | null; createdAt: number }): ArtifactRecord {
  const content = canonicalJson(identity.content);
  const normalized: ArtifactIdentity = {
    kind: identity.kind,
    sessionId: identity.sessionId,
    tags: normalizedSet(identity.tags),
    parents: normalizedSet(identity.parents),
    metadata: JSON.parse(canonicalJson(identity.metadata)) as JsonObject,
    content: JSON.parse(content) as unknown,
  };
  return { ...normalized, ...extra, id: artifactId(normalized), size: Buffer.byteLength(content, 'utf8') };
}

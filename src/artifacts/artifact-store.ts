import type { ArtifactRecord, ArtifactWrite } from './artifact-record';

/** An artifact without its content: what a listing shows. */
export type ArtifactSummary = Omit<ArtifactRecord, 'content'>;

/** A position in a listing (newest first): the artifact after which the next page starts. */
export interface ListPosition {
  createdAt: number;
  id: string;
}

export interface ArtifactListQuery {
  tenant: string;
  sessionId?: string;
  /** Exact match on one of the artifact's tags. */
  tag?: string;
  kind?: string;
  limit: number;
  /** Only artifacts listed after this position (older, or as old with a smaller id). */
  after?: ListPosition;
}

/** Persistence port for artifacts; the TypeORM implementation lives in artifact-store.typeorm.ts. */
export abstract class ArtifactStore {
  /**
   * Stores the artifact with its tags and its separate transcript, all or nothing. Returns false
   * when the tenant already had an artifact with this id: nothing is written then (ids are
   * content addresses, so it is the same artifact).
   */
  abstract save(write: ArtifactWrite): Promise<boolean>;
  /** Stores a batch in one transaction; artifacts already present are skipped. */
  abstract saveMany(writes: ArtifactWrite[]): Promise<void>;
  abstract find(tenant: string, id: string): Promise<ArtifactRecord | null>;
  /** The separately stored transcript of an artifact, if it has one. */
  abstract findTranscript(tenant: string, id: string): Promise<string | null>;
  /** Newest first (`created_at`, then id, descending), at most `limit`. */
  abstract list(query: ArtifactListQuery): Promise<ArtifactSummary[]>;
  /** Which of `ids` the tenant has. */
  abstract existing(tenant: string, ids: string[]): Promise<Set<string>>;
  /** The bytes (`size`) of the tenant's stored artifacts, for its quota. */
  abstract storedBytes(tenant: string): Promise<number>;
  /** Deletes artifacts (with tags and transcripts) created before `cutoff`, oldest first, in chunks; returns how many artifacts. */
  abstract deleteCreatedBefore(cutoff: number): Promise<number>;
}

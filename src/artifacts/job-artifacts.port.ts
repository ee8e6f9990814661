/**
 * What the task API tells the artifact registry when a task ends (control-data-plane spec §9:
 * every job leaves an artifact, also on failure). Implemented by artifacts/; the task API only
 * depends on this port.
 */
export interface JobArtifactInput {
  /** The task id. */
  jobId: string;
  sessionId?: string;
  tenant: string;
  /** The request's parameters with the prompt (`messages`, `prompt`, `input`, `system`) redacted. */
  params: Record<string, unknown>;
  maxTokens?: number;
  /** The context the task ran with (the client's `ctx`, else its worker's); null or absent = unknown, recorded as null. */
  ctx?: number | null;
  /** Runner type of the worker that ran it (`llama-server`, `vllm`, …); null or absent = unknown, recorded as null. */
  engine?: string | null;
  engineVersion?: string | null;
  /** The model that served the task (after aliases and pinning). */
  modelRef: string;
  pool?: string;
  seed?: number;
  /** `output_mode` hint as the client sent it (`text` | `json` | `edits`), when valid. */
  outputMode?: string;
  status: 'completed' | 'failed' | 'cancelled';
  tokensOut: number;
  decodeTimeMs: number;
  /** The task's SSE events as a reader receives them (`id:`/`event:`/`data:` lines). */
  transcript: string;
  error?: { code: string; message: string; retriable?: boolean };
  tags?: string[];
  /** Lineage: ids of the artifacts this one derives from. */
  parents?: string[];
  createdAt: number;
}

export interface JobArtifacts {
  /**
   * Records a finished task's artifact and returns its content-addressed id at once; the write
   * happens behind (never awaited on the request path).
   */
  recordJob(input: JobArtifactInput): string;
}

export const JOB_ARTIFACTS = Symbol('JOB_ARTIFACTS');

/** Used when no artifact registry is wired (unit tests). */
export const NO_JOB_ARTIFACTS: JobArtifacts = { recordJob: () => '' };

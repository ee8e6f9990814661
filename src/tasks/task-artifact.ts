import type { JobArtifactInput } from '../artifacts/job-artifacts.port';
import type { FinalStatus, Task } from './task';

/** What a finished task leaves in the artifact registry (control-data-plane spec §9). */
export function jobArtifactOf(task: Task): JobArtifactInput {
  const req = task.request;
  const runner = task.runner;
  const input: JobArtifactInput = {
    jobId: task.id,
    tenant: task.tenant,
    params: req.params,
    maxTokens: req.maxTokens,
    modelRef: task.servedModel ?? req.model,
    status: task.status as FinalStatus,
    tokensOut: task.tokensOut,
    decodeTimeMs: task.decodeTimeMs(task.endedAt),
    transcript: task.events.transcript(),
    createdAt: task.createdAt,
    // Always recorded (spec §9), null when unknown: the effective context, the worker's runner.
    ctx: req.ctx ?? task.workerContext ?? null,
    engine: runner?.type || null,
    engineVersion: runner?.version || null,
  };
  if (req.sessionId !== undefined) input.sessionId = req.sessionId;
  if (task.pool) input.pool = task.pool;
  if (req.seed !== undefined) input.seed = req.seed;
  if (req.outputMode !== undefined) input.outputMode = req.outputMode;
  if (req.tags.length) input.tags = req.tags;
  if (req.parents.length) input.parents = req.parents;
  if (task.error) input.error = { code: task.error.code, message: task.error.message, retriable: task.error.retriable };
  return input;
}

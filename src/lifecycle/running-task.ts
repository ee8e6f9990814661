import type { TimerHandle } from '../common/clock';
import { Errors, GatewayError } from '../common/gateway-error';
import type { LifecycleCommandMessage } from '../protocol';
import type { WorkerSession } from '../fleet/worker-session';
import type { AuditContext } from './audit-context';
import { LifecycleTask, partView, TaskPart, taskError } from './lifecycle-task';

/** One worker's part while it runs. */
export interface RunningPart {
  part: TaskPart;
  worker: WorkerSession;
  /** Conflict keys this part holds on its worker (see target-selection). */
  keys: string[];
  /** Models held out of routing on the worker for this part (see PartRunner.finish). */
  holds: string[];
  timer?: TimerHandle;
  /** Ends a drain that is still waiting (the part finished meanwhile). */
  stopDrain?: () => void;
}

/** A lifecycle operation while it runs (a model load stays until its final state is written). */
export interface RunningTask {
  task: LifecycleTask;
  parts: Map<string, RunningPart>;
  audit: AuditContext;
  /** Resolves once every part has finished. */
  settled: Promise<void>;
  settle: () => void;
  /** When a model load was last written (progress is written at most every PROGRESS_WRITE_MS). */
  persistedAt: number;
  /** Writes progress reported within PROGRESS_WRITE_MS of the last write once that interval ends. */
  progressTimer?: TimerHandle;
  /** Its row waits in the write queue (built when written: later changes join it). */
  writeQueued?: boolean;
}

/** What to send one worker, and what to drain on it first. */
export interface PartPlan {
  frame: LifecycleCommandMessage;
  keys: string[];
  /** A model to take out of routing and let drain before sending (unload; a load's evicted model). */
  drain?: string;
}

/**
 * What becomes of a finished part's holds: released at once (nothing was sent, or the worker said
 * it failed: it still serves the model), or kept until the worker's model list can be trusted
 * (it completed; or nobody knows how it ended: see SettlingHolds).
 */
export type HoldsAfter = 'release' | 'completed' | 'unknown';

/** `<operation>[ of '<model>']`, as the log names a task. */
export function taskLabel(task: LifecycleTask): string {
  return `${task.operation}${task.modelId ? ` of '${task.modelId}'` : ''}`;
}

/** The error an operation that did not complete everywhere answers with. */
export function operationFailed(task: LifecycleTask): GatewayError {
  const bad = task.parts.filter((p) => p.status !== 'completed').length;
  const what = `${task.operation}${task.modelId ? ` of '${task.modelId}'` : task.scope ? ` (scope ${task.scope})` : ''}`;
  return Errors.lifecycleFailed(
    `${what} did not complete on ${bad} of ${task.parts.length} worker(s): ${taskError(task.parts) ?? 'no reason given'}`.slice(0, 1000),
    task.parts.map(partView),
  );
}

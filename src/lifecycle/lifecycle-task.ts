import type { CacheFlushScope } from '../protocol';
import type { LifecycleOperation } from '../governance/op-token';

/**
 * Where one worker's part of an operation stands: `draining` (waiting for the model's in-flight
 * requests before anything is sent), `sent`, then what the worker reports.
 */
export type PartStatus = 'draining' | 'sent' | 'accepted' | 'loading' | 'completed' | 'failed' | 'unsupported';
export const FINISHED_PART: ReadonlySet<PartStatus> = new Set(['completed', 'failed', 'unsupported']);

export type TaskStatus = 'loading' | 'completed' | 'failed';

/** One worker's share of a lifecycle operation, as it is stored (JSON) and shown. */
export interface TaskPart {
  workerId: string;
  name: string;
  pool: string;
  status: PartStatus;
  /** 0–1. */
  progress: number;
  etaSecs?: number;
  gpuMemoryUsedMB?: number;
  gpuMemoryFreedMB?: number;
  entriesRemoved?: number;
  memoryFreedMB?: number;
  loadTimeMs?: number;
  /** `<reason>: <detail>`, e.g. `worker_disconnected: …`, `timeout: …`, `failed: <the worker's words>`. */
  error?: string;
  /** Epoch ms when the operation was sent to the worker. */
  sentAt?: number;
}

/** What `model_load` asks for besides the model. */
export interface LoadOptions {
  quantization?: string;
  maxContextLength?: number;
  gpuMemoryBudgetMB?: number;
  evictModel?: string;
}

export interface LifecycleTask {
  id: string;
  operation: LifecycleOperation;
  modelId?: string;
  scope?: CacheFlushScope;
  tenantId?: string;
  tag?: string;
  options: LoadOptions;
  parts: TaskPart[];
  createdAt: number;
  updatedAt: number;
  finishedAt?: number;
}

export function partFinished(part: TaskPart): boolean {
  return FINISHED_PART.has(part.status);
}

/** `loading` while a part is unfinished; then `completed` when every part completed, else `failed`. */
export function taskStatus(parts: readonly TaskPart[]): TaskStatus {
  if (parts.some((p) => !partFinished(p))) return 'loading';
  return parts.every((p) => p.status === 'completed') ? 'completed' : 'failed';
}

/** The parts' errors, each named by its worker; undefined when none failed. */
export function taskError(parts: readonly TaskPart[]): string | undefined {
  const failed = parts.filter((p) => p.error !== undefined);
  return failed.length ? failed.map((p) => `${p.name}: ${p.error}`).join('; ') : undefined;
}

/** Mean progress of the parts (a finished part counts as done). */
export function taskProgress(parts: readonly TaskPart[]): number {
  if (parts.length === 0) return 0;
  const sum = parts.reduce((n, p) => n + (partFinished(p) ? 1 : p.progress), 0);
  return Math.round((sum / parts.length) * 1000) / 1000;
}

/** Seconds until the slowest unfinished part is done, when every such part said; else null. */
export function taskEta(parts: readonly TaskPart[]): number | null {
  const open = parts.filter((p) => !partFinished(p));
  if (open.length === 0) return 0;
  if (open.some((p) => p.etaSecs === undefined)) return null;
  return Math.max(...open.map((p) => p.etaSecs!));
}

/** Sum of a figure over the parts that reported it; undefined when none did. */
export function total(parts: readonly TaskPart[], figure: 'gpuMemoryUsedMB' | 'gpuMemoryFreedMB' | 'entriesRemoved' | 'memoryFreedMB'): number | undefined {
  const reported = parts.filter((p) => p[figure] !== undefined);
  return reported.length ? reported.reduce((n, p) => n + p[figure]!, 0) : undefined;
}

/** A part as the API shows it. */
export function partView(p: TaskPart) {
  return {
    workerId: p.workerId,
    name: p.name,
    pool: p.pool,
    status: p.status,
    progress: partFinished(p) && p.status === 'completed' ? 1 : p.progress,
    ...(p.etaSecs !== undefined && !partFinished(p) ? { eta: p.etaSecs } : {}),
    ...(p.gpuMemoryUsedMB !== undefined ? { gpuMemoryUsedMB: p.gpuMemoryUsedMB } : {}),
    ...(p.gpuMemoryFreedMB !== undefined ? { gpuMemoryFreedMB: p.gpuMemoryFreedMB } : {}),
    ...(p.entriesRemoved !== undefined ? { entriesRemoved: p.entriesRemoved } : {}),
    ...(p.memoryFreedMB !== undefined ? { memoryFreedMB: p.memoryFreedMB } : {}),
    ...(p.loadTimeMs !== undefined ? { loadTimeMs: p.loadTimeMs } : {}),
    ...(p.error !== undefined ? { error: p.error } : {}),
  };
}

/** `GET /v1/models/load/:taskId` (and the 202 of the load). */
export function loadTaskView(task: Pick<LifecycleTask, 'id' | 'modelId' | 'parts'>) {
  const status = taskStatus(task.parts);
  const used = total(task.parts, 'gpuMemoryUsedMB');
  const times = task.parts.filter((p) => p.loadTimeMs !== undefined).map((p) => p.loadTimeMs!);
  const error = status === 'failed' ? taskError(task.parts) : undefined;
  return {
    taskId: task.id,
    status,
    progress: status === 'completed' ? 1 : taskProgress(task.parts),
    eta: status === 'loading' ? taskEta(task.parts) : 0,
    modelId: task.modelId!,
    workers: task.parts.map(partView),
    ...(used !== undefined ? { gpuMemoryUsedMB: used } : {}),
    ...(status === 'completed' && times.length ? { loadTimeMs: Math.max(...times) } : {}),
    ...(error !== undefined ? { error } : {}),
  };
}

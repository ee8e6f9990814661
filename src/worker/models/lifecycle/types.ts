import { CacheFlushMessage, LifecycleStatusMessage, ModelLoadMessage, ModelUnloadMessage } from '../../../protocol';
import type { LifecycleHttp } from './backend-http';

/** The backends the daemon knows how to drive; `auto` picks one from what the probe detected. */
export const RUNNER_TYPES = ['auto', 'runner-api', 'llama-server', 'vllm', 'ollama', 'openai-compatible'] as const;
export type RunnerChoice = (typeof RUNNER_TYPES)[number];
export type RunnerType = Exclude<RunnerChoice, 'auto'>;

/** The figures a finished operation may report (omitted when the backend does not say). */
export type Figures = Pick<LifecycleStatusMessage, 'gpu_memory_used_mb' | 'gpu_memory_freed_mb' | 'entries_removed' | 'memory_freed_mb'>;

/** The backend cannot do this at all (as it runs now): reported as `unsupported`, with why. */
export class Unsupported extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'Unsupported';
  }
}

/** The backend could have done it but did not: reported as `failed`. */
export class OperationFailed extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'OperationFailed';
  }
}

/** What an adapter gets to carry out one operation. */
export interface OperationContext {
  /** Aborted when the operation's deadline passes, the gateway link drops or the daemon stops. */
  readonly signal: AbortSignal;
  readonly http: LifecycleHttp;
  /** How far the operation is, 0–1, and the seconds left when known (throttled before it reaches the gateway). */
  progress(fraction: number, etaSecs?: number): void;
  /** Waits one poll interval; rejects once the operation is aborted. */
  pause(): Promise<void>;
}

/**
 * Carries out lifecycle operations on one kind of backend. Each method resolves once the backend
 * is in the asked state (with the figures it reported), or throws `Unsupported` /
 * `OperationFailed`; any other error (network, timeout) is reported as `failed` too.
 */
export interface LifecycleAdapter {
  readonly runner: RunnerType;
  load(command: ModelLoadMessage, ctx: OperationContext): Promise<Figures>;
  unload(command: ModelUnloadMessage, ctx: OperationContext): Promise<Figures>;
  flush(command: CacheFlushMessage, ctx: OperationContext): Promise<Figures>;
  /**
   * The listed models the backend can answer right now (a sleeping vLLM answers 503, a llama-server
   * router without autoload refuses models it has not loaded). Absent: all listed models are.
   */
  servable?(models: string[], http: LifecycleHttp, signal: AbortSignal): Promise<string[]>;
}

/** Unloads `evict_model` first, for adapters whose backend has no load-with-eviction of its own. */
export async function evictFirst(adapter: LifecycleAdapter, command: ModelLoadMessage, ctx: OperationContext): Promise<void> {
  if (!command.evict_model) return;
  await adapter.unload({ type: 'model_unload', task_id: command.task_id, model_id: command.evict_model }, ctx);
}

/** Bytes → MiB as the protocol reports memory; undefined for anything but a sane byte count. */
export function mebibytes(bytes: unknown): number | undefined {
  return typeof bytes === 'number' && Number.isFinite(bytes) && bytes >= 0 ? Math.round(bytes / (1 << 20)) : undefined;
}

/** A non-negative finite number, else undefined (backend figures are relayed only when sane). */
export function figure(v: unknown): number | undefined {
  return typeof v === 'number' && Number.isFinite(v) && v >= 0 ? v : undefined;
}

/** Drops undefined fields: optional fields are omitted on the wire, never sent as null. */
export function compact<T extends object>(o: T): T {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as T;
}

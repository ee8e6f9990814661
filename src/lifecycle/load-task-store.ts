import type { LoadOptions, TaskPart, TaskStatus } from './lifecycle-task';

/** A model load as it is persisted. */
export interface LoadTaskRecord {
  id: string;
  modelId: string;
  status: TaskStatus;
  error?: string;
  options: LoadOptions;
  parts: TaskPart[];
  gatewayInstanceId: string;
  createdAt: number;
  updatedAt: number;
  finishedAt?: number;
}

/** Persistence port of model-load tasks; the TypeORM implementation is load-task-store.typeorm.ts. */
export abstract class LoadTaskStore {
  /** Insert or replace. */
  abstract save(task: LoadTaskRecord): Promise<void>;
  abstract get(id: string): Promise<LoadTaskRecord | undefined>;
  /** Tasks of this gateway instance still `loading` (left so by a previous run of it). */
  abstract unfinished(gatewayInstanceId: string): Promise<LoadTaskRecord[]>;
  /** Deletes tasks last changed before `cutoff` (epoch ms); returns how many. */
  abstract deleteUpdatedBefore(cutoff: number): Promise<number>;
}

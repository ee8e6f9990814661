import type { ConnectionConfig } from '../config/sections/connection';
import { WorkerLimits } from './sanitize-models';

/**
 * Bytes a `register` frame may take per model its provider allows: the model's name in `models`
 * and again as a key of `capabilities`, with every capability hint set. The longest legitimate
 * list (1 024 models whose names fill the 65 536-character total: 64 characters each) needs
 * about 2 × 64 + 80 = 208 bytes a model.
 */
export const REGISTER_BYTES_PER_MODEL = 256;

/**
 * The largest frame a worker naming `maxModels`'s provider may send before it has registered:
 * WORKER_REGISTER_FRAME_BYTES (room for everything but the model list: runner capabilities,
 * endpoints, names) plus REGISTER_BYTES_PER_MODEL for each model the provider allows (`max_models`,
 * at most the gateway's ceiling), never above MAX_WORKER_FRAME_BYTES. A flat 64 KiB refused a
 * valid register of ~1 000 models (about 200 KB) with 1009, and the worker reconnected with the
 * same frame forever; this keeps every valid register within the cap, while an unknown provider
 * (`maxModels` undefined) still gets only the base, and nobody gets ws's 100 MiB default.
 */
export function registerFrameCap(config: ConnectionConfig, maxModels: number | undefined): number {
  const models = Math.min(maxModels ?? 0, WorkerLimits.models);
  return Math.min(config.maxWorkerFrameBytes, config.workerRegisterFrameBytes + models * REGISTER_BYTES_PER_MODEL);
}

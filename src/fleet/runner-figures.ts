import type { RunnerFigures } from '../observability/runner-metrics';

type Doc = Record<string, unknown> | undefined;

const MB = 1024 * 1024;

function section(doc: Doc, key: string): Record<string, unknown> | undefined {
  const v = doc?.[key];
  return v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined;
}

function figure(v: unknown): number | undefined {
  return typeof v === 'number' && Number.isFinite(v) && v >= 0 ? v : undefined;
}

/** A GPU id as a label value: short, printable. */
function gpuLabel(v: unknown): string | undefined {
  if (typeof v === 'number' && Number.isInteger(v) && v >= 0) return String(v);
  if (typeof v === 'string' && /^[\w.:-]{1,32}$/.test(v)) return v;
  return undefined;
}

/**
 * What the metrics read from a runner document (the runner API's `GET /v1/capabilities`, as the
 * worker relayed it): `resources.gpus[]` with `id` and `gpuMemoryUsedMB` per GPU when given,
 * else `resources.gpuMemoryUsedMB` for the GPUs of `resources.gpuIds` (one series; the ids
 * joined by `,`; `all` without ids), and `resources.kvCacheUtilization` (clamped to 0-1).
 * Pure; undefined when the document says neither.
 */
export function runnerFigures(pool: string, worker: string, doc: Doc): RunnerFigures | undefined {
  const resources = section(doc, 'resources');
  if (!resources) return undefined;
  const gpus: RunnerFigures['gpus'] = [];
  if (Array.isArray(resources.gpus)) {
    for (const g of resources.gpus.slice(0, 64)) {
      const entry = g && typeof g === 'object' ? (g as Record<string, unknown>) : undefined;
      const id = gpuLabel(entry?.id);
      const used = figure(entry?.gpuMemoryUsedMB);
      if (id !== undefined && used !== undefined) gpus.push({ gpu: id, usedBytes: used * MB });
    }
  }
  const total = figure(resources.gpuMemoryUsedMB);
  if (gpus.length === 0 && total !== undefined) {
    const ids = Array.isArray(resources.gpuIds) ? resources.gpuIds.slice(0, 64).map(gpuLabel) : [];
    const gpu = ids.length > 0 && ids.every((id) => id !== undefined) ? ids.join(',') : 'all';
    gpus.push({ gpu, usedBytes: total * MB });
  }
  const kv = figure(resources.kvCacheUtilization);
  if (gpus.length === 0 && kv === undefined) return undefined;
  return { pool, worker, gpus, ...(kv !== undefined ? { kvCacheUsage: Math.min(1, kv) } : {}) };
}

import type { TokenCounts } from '../protocol';

/**
 * One finished client request, as chargeback needs it: who (tenant, key), what (models, provider,
 * worker, endpoint), how it ended (status, error code), how much (tokens) and how long. Never the
 * prompt, the output or any header.
 */
export interface UsageRecord {
  /** The request id (`r-<uuid>`): unique across gateways, so it is the primary key. */
  id: string;
  /** When the gateway received the request (epoch ms). */
  receivedAt: number;
  /** `receivedAt` as a UTC calendar day, `YYYY-MM-DD` (group_by=day without date functions in SQL). */
  day: string;
  tenant: string;
  keyId: string | null;
  /** The model the client asked for (an alias, or a model a fallback replaced). */
  requestedModel: string;
  /** The model that served, or would have served, the request; null when no provider took it. */
  servedModel: string | null;
  provider: string | null;
  workerId: string | null;
  workerName: string | null;
  endpoint: string;
  /** HTTP status sent (499: the client left first). */
  status: number;
  /** The gateway's error code when the request failed in the gateway; null for worker answers. */
  errorCode: string | null;
  /** As the worker reported them; null when it reported none. */
  promptTokens: number | null;
  completionTokens: number | null;
  /** Time spent in the queue, over every wait (requeues included). */
  queueWaitMs: number;
  /** Arrival to the first response byte from a worker; null when none came. */
  ttfbMs: number | null;
  /** Arrival to the end of the request. */
  durationMs: number;
  /** Placement on its last worker to completion there: the time it held a worker slot; null when no worker took it. */
  workerMs: number | null;
  /** The backend's own time, where the worker reports it; null otherwise. */
  backendMs: number | null;
  /** Its share of GPU time: `workerMs / max_concurrent × gpus_per_worker` (a slot is a share of the worker); null without a worker. */
  gpuMs: number | null;
  /** `gpuMs` priced at its pool's `cost_per_gpu_hour` when the record was made; null when the pool sets no price. */
  cost: number | null;
}

/** Column widths of `usage_records`; longer values are cut (PostgreSQL would reject the whole batch). */
export const USAGE_WIDTHS = {
  id: 64,
  tenant: 64,
  keyId: 64,
  model: 255,
  provider: 64,
  workerId: 128,
  workerName: 255,
  endpoint: 64,
  errorCode: 64,
} as const;

const MAX_INT = 2_147_483_647;

/** The UTC day of an epoch-ms time, `YYYY-MM-DD`. */
const DAY_MS = 86_400_000;
/** The last day computed: every request of a day asks for the same one (no Date per request). */
let cachedDay = { start: 0, end: 0, label: '' };

export function utcDay(epochMs: number): string {
  if (epochMs < cachedDay.start || epochMs >= cachedDay.end) {
    const start = Math.floor(epochMs / DAY_MS) * DAY_MS;
    cachedDay = { start, end: start + DAY_MS, label: new Date(start).toISOString().slice(0, 10) };
  }
  return cachedDay.label;
}

/** What a usage record is made of: a finished request as the dispatcher knows it (RelayRequest). */
export interface UsageSource {
  readonly id: string;
  readonly receivedAt: number;
  readonly tenant: string;
  readonly keyId: string | undefined;
  /** The model the client asked for. */
  readonly model: string;
  readonly targetModel: string;
  readonly provider: { readonly name: string; readonly costPerGpuHour?: number | null; readonly gpusPerWorker?: number | null } | undefined;
  readonly worker: { readonly id: string; readonly name: string; readonly maxConcurrent: number } | undefined;
  readonly endpointPath: string;
  readonly errorCode: string | undefined;
  readonly tokenCounts: TokenCounts | undefined;
  readonly waitedMs: number;
  readonly queuedAt: number;
  readonly firstByteAt: number;
  /** When its current worker was given it (0 = never placed). */
  readonly assignedAt: number;
  /** The backend's own processing time, when its worker reported it (`gpu_time_ms`). */
  readonly backendMs?: number;
}

/** The usage record of a request that has just finished with `status` at `finishedAt`. */
export function usageRecordOf(req: UsageSource, status: number, finishedAt: number): UsageRecord {
  // A request still queued when it ends (client gone) has not folded its current wait in yet.
  const queueWaitMs = req.waitedMs + (req.queuedAt ? finishedAt - req.queuedAt : 0);
  const counts = req.tokenCounts;
  const record: UsageRecord = {
    id: cut(req.id, USAGE_WIDTHS.id),
    receivedAt: req.receivedAt,
    day: utcDay(req.receivedAt),
    tenant: cut(req.tenant, USAGE_WIDTHS.tenant),
    keyId: req.keyId ? cut(req.keyId, USAGE_WIDTHS.keyId) : null,
    requestedModel: cut(req.model, USAGE_WIDTHS.model),
    servedModel: req.targetModel ? cut(req.targetModel, USAGE_WIDTHS.model) : null,
    provider: req.provider ? cut(req.provider.name, USAGE_WIDTHS.provider) : null,
    workerId: req.worker ? cut(req.worker.id, USAGE_WIDTHS.workerId) : null,
    workerName: req.worker ? cut(req.worker.name, USAGE_WIDTHS.workerName) : null,
    endpoint: cut(req.endpointPath, USAGE_WIDTHS.endpoint),
    status,
    errorCode: req.errorCode ?? null,
    promptTokens: tokenCount(counts?.prompt_tokens),
    completionTokens: tokenCount(counts?.completion_tokens),
    queueWaitMs: millis(queueWaitMs),
    ttfbMs: req.firstByteAt ? millis(req.firstByteAt - req.receivedAt) : null,
    durationMs: millis(finishedAt - req.receivedAt),
    // Filled in by addSlotTime, on this same object (no second object spread into it per request).
    workerMs: null,
    backendMs: null,
    gpuMs: null,
    cost: null,
  };
  addSlotTime(record, req, finishedAt);
  return record;
}

const MS_PER_HOUR = 3_600_000;

/**
 * The time the request held a worker slot, and its GPU share and cost. A worker running
 * `max_concurrent` requests at once lends each a slot, a `1 / max_concurrent` share of its
 * `gpus_per_worker` GPUs (docs/enterprise.md#chargeback). Only the last placement counts: a
 * worker that vanished before answering is not charged.
 */
function addSlotTime(record: UsageRecord, req: UsageSource, finishedAt: number): void {
  if (!req.worker || !req.assignedAt) return;
  const workerMs = millis(finishedAt - req.assignedAt);
  const gpus = req.provider?.gpusPerWorker ?? 1;
  const gpuMs = (workerMs / Math.max(1, req.worker.maxConcurrent)) * gpus;
  const price = req.provider?.costPerGpuHour;
  record.workerMs = workerMs;
  record.backendMs = req.backendMs === undefined ? null : millis(req.backendMs);
  record.gpuMs = gpuMs;
  record.cost = typeof price === 'number' ? (gpuMs / MS_PER_HOUR) * price : null;
}

/**
 * Fits a (possibly client-chosen) string to its column: NUL characters, which PostgreSQL refuses in
 * text, are removed, and the value is cut to `width` without leaving half a surrogate pair.
 */
function cut(value: string, width: number): string {
  const clean = value.includes('\u0000') ? value.replace(/\u0000/g, '') : value;
  return clean.length > width ? clean.slice(0, width).replace(/[\uD800-\uDBFF]$/, '') : clean;
}

function tokenCount(n: number | undefined): number | null {
  return typeof n === 'number' && Number.isInteger(n) && n >= 0 ? Math.min(n, MAX_INT) : null;
}

/** A duration for an INTEGER column: whole, not negative, within 32 bits. */
function millis(ms: number): number {
  return Number.isFinite(ms) ? Math.min(MAX_INT, Math.max(0, Math.round(ms))) : 0;
}

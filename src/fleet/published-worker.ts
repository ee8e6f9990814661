import { CapabilityBounds, ModelCapabilities, readCapabilities, RunnerInfo } from '../protocol';
import { clampInt, WorkerNumberBounds } from '../protocol/number-bounds';
import { optCacheStats } from '../protocol/cache-stats-codec';
import type { WorkerSession } from './worker-session';
import { toSnapshotData, WorkerSnapshotData } from './worker-snapshot';

/**
 * What a replica publishes about each worker connected to it (cluster mode): the snapshot's plain
 * form plus what another replica needs to send it requests (its negotiated features, its runner).
 */
export interface PublishedWorker extends WorkerSnapshotData {
  features: string[];
  runner?: RunnerInfo;
  /** How long before publishing its replica last heard from it (an age, so replicas' clocks need not agree). */
  seen_ago_ms: number;
}

/** Bounds on what is read back: another replica's data is input like any other. */
const MAX_MODELS = 4096;
const MAX_STRING = 512;
const MAX_ENDPOINTS = 256;

/**
 * `leaving`: this replica is shutting down, so its workers are about to reconnect to another one.
 * They are published busy rather than draining: the other replicas' requests then wait for them
 * (or any other worker) instead of being refused as if no healthy worker were left.
 */
export function publishWorker(w: WorkerSession, now: number, leaving = false): PublishedWorker {
  const data = { ...toSnapshotData(w), features: [...w.features], ...(w.runner ? { runner: w.runner } : {}), seen_ago_ms: Math.max(0, now - w.lastSeenAt) };
  return leaving ? { ...data, draining: false, load: Math.max(data.load, w.maxConcurrent) } : data;
}

/** A published worker read back from the cluster's store, validated and clamped; undefined if malformed. */
export function readPublishedWorker(raw: unknown): PublishedWorker | undefined {
  if (!raw || typeof raw !== 'object') return undefined;
  const o = raw as Record<string, unknown>;
  const id = str(o.id);
  const name = str(o.name);
  const provider = str(o.provider);
  const replica = str(o.replica);
  const models = strings(o.models, MAX_MODELS);
  const maxConcurrent = clampInt(o.max_concurrent, 1, WorkerNumberBounds.maxConcurrent);
  if (!id || !name || !provider || !replica || !models || maxConcurrent === undefined) return undefined;
  const endpoints = o.endpoints === null ? null : strings(o.endpoints, MAX_ENDPOINTS);
  if (endpoints === undefined) return undefined;
  const priority = o.priority === null || o.priority === undefined ? null : (clampInt(o.priority, 0, WorkerNumberBounds.priority) ?? null);
  const runner = readRunner(o.runner);
  const cacheStats = optCacheStats(o.cache_stats);
  return {
    id,
    name,
    provider,
    replica,
    models,
    held_out: strings(o.held_out, MAX_MODELS) ?? [],
    capabilities: readCapabilityMap(o.capabilities),
    endpoints,
    priority,
    max_concurrent: maxConcurrent,
    load: clampInt(o.load, 0, WorkerNumberBounds.load) ?? 0,
    draining: o.draining === true,
    connected_at: clampInt(o.connected_at, 0, WorkerNumberBounds.epochMs) ?? 0,
    last_seen_at: clampInt(o.last_seen_at, 0, WorkerNumberBounds.epochMs) ?? 0,
    health: null,
    features: strings(o.features, 64) ?? [],
    seen_ago_ms: clampInt(o.seen_ago_ms, 0, WorkerNumberBounds.epochMs) ?? 0,
    ...(runner ? { runner } : {}),
    ...(cacheStats ? { cache_stats: cacheStats } : {}),
  };
}

function str(v: unknown): string | undefined {
  return typeof v === 'string' && v.length > 0 && v.length <= MAX_STRING ? v : undefined;
}

function strings(v: unknown, max: number): string[] | undefined {
  if (!Array.isArray(v) || v.length > max) return undefined;
  const out: string[] = [];
  for (const s of v) {
    const ok = str(s);
    if (ok === undefined) return undefined;
    out.push(ok);
  }
  return out;
}

/** The clamp every published number gets: the publishing replica already read them as hints. */
const PUBLISHED_CAPABILITIES: CapabilityBounds = { contextLength: WorkerNumberBounds.contextLength, numbers: 'clamped' };

function readCapabilityMap(v: unknown): Record<string, ModelCapabilities> {
  const out: Record<string, ModelCapabilities> = {};
  if (!v || typeof v !== 'object' || Array.isArray(v)) return out;
  let n = 0;
  for (const [model, caps] of Object.entries(v as Record<string, unknown>)) {
    if (++n > MAX_MODELS || !str(model) || model === '__proto__' || !caps || typeof caps !== 'object') continue;
    out[model] = readCapabilities(caps, PUBLISHED_CAPABILITIES);
  }
  return out;
}

function readRunner(v: unknown): RunnerInfo | undefined {
  if (!v || typeof v !== 'object') return undefined;
  const type = str((v as Record<string, unknown>).type);
  const version = str((v as Record<string, unknown>).version);
  return type ? { type, ...(version ? { version } : {}) } : undefined;
}

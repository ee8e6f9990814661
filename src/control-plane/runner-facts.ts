import type { WorkerSnapshot } from '../fleet/worker-snapshot';

/** A value the pool's workers agree on, or the list of their values when they differ. */
export type OneOrMany = string | string[];

/** GPU memory and KV cache of a pool: sums (utilisation weighted by KV cache size) over the workers that report them. */
export interface PoolResources {
  gpuMemoryTotalMB?: number;
  gpuMemoryUsedMB?: number;
  gpuMemoryFreeMB?: number;
  kvCacheSizeMB?: number;
  kvCacheUtilization?: number;
  /** How many of the pool's workers relayed a runner document with a `resources` section. */
  reporting_workers: number;
}

/** What `/v1/capabilities` says about a pool's engines, from its workers' runner info and runner-API documents. */
export interface PoolRunnerFacts {
  engine?: OneOrMany;
  engine_version?: OneOrMany;
  sampler_profile_version?: OneOrMany;
  max_tokens_out?: number;
  prefixCaching?: boolean;
  multiTenant?: boolean;
  audioInput?: boolean;
  resources?: PoolResources;
}

type Doc = Record<string, unknown>;

const FLAGS = ['prefixCaching', 'multiTenant', 'audioInput'] as const;
const SUMMED = ['gpuMemoryTotalMB', 'gpuMemoryUsedMB', 'gpuMemoryFreeMB', 'kvCacheSizeMB'] as const;

/**
 * Aggregates the pool's workers (every connected one: a draining worker still holds its GPU):
 * - `engine` / `engine_version`: the `runner` each daemon detected (else the document's
 *   `runnerType`), one string when they agree, a sorted list when mixed, absent when unknown;
 * - `sampler_profile_version`: the documents' `samplerProfileVersion` (or `sampler_profile_version`), likewise;
 * - `max_tokens_out`: the largest `maxTokensOut` (or `max_tokens_out`) a document reports, else
 *   `ctxMax` (prompt + max_tokens must fit the context), absent when neither is known;
 * - `prefixCaching`, `multiTenant`, `audioInput`: from the documents' `capabilities`, true when
 *   every worker that reports the flag says true, absent when none reports it;
 * - `resources`: the documents' `resources` summed (see PoolResources).
 */
export function runnerFacts(workers: readonly WorkerSnapshot[], ctxMax: number): PoolRunnerFacts {
  const engines = new Set<string>();
  const versions = new Set<string>();
  const samplers = new Set<string>();
  let maxTokensOut: number | undefined;
  const flags = new Map<string, boolean>();
  const resources = new Resources();
  for (const w of workers) {
    const doc = w.runnerCapabilities;
    const engine = w.runner?.type ?? str(doc?.runnerType);
    if (engine) engines.add(engine);
    if (w.runner?.version) versions.add(w.runner.version);
    if (!doc) continue;
    const sampler = str(doc.samplerProfileVersion) ?? str(doc.sampler_profile_version);
    if (sampler) samplers.add(sampler);
    const out = num(doc.maxTokensOut) ?? num(doc.max_tokens_out);
    if (out !== undefined) maxTokensOut = Math.max(maxTokensOut ?? 0, out);
    const caps = obj(doc.capabilities);
    for (const f of FLAGS) if (typeof caps?.[f] === 'boolean') flags.set(f, (flags.get(f) ?? true) && (caps[f] as boolean));
    resources.add(obj(doc.resources));
  }
  const facts: PoolRunnerFacts = {};
  setOneOrMany(facts, 'engine', engines);
  setOneOrMany(facts, 'engine_version', versions);
  setOneOrMany(facts, 'sampler_profile_version', samplers);
  const out = maxTokensOut ?? (ctxMax > 0 ? ctxMax : undefined);
  if (out !== undefined) facts.max_tokens_out = out;
  for (const f of FLAGS) if (flags.has(f)) facts[f] = flags.get(f);
  const r = resources.result();
  if (r) facts.resources = r;
  return facts;
}

class Resources {
  private readonly sums = new Map<string, number>();
  private reporting = 0;
  private kvWeighted = 0;
  private kvWeight = 0;
  private kvPlain: number[] = [];

  add(r: Doc | undefined): void {
    if (!r) return;
    this.reporting++;
    for (const k of SUMMED) {
      const v = num(r[k]);
      if (v !== undefined) this.sums.set(k, (this.sums.get(k) ?? 0) + v);
    }
    const util = num(r.kvCacheUtilization);
    if (util === undefined) return;
    const size = num(r.kvCacheSizeMB);
    if (size !== undefined && size > 0) {
      this.kvWeighted += util * size;
      this.kvWeight += size;
    } else this.kvPlain.push(util);
  }

  result(): PoolResources | undefined {
    if (this.reporting === 0) return undefined;
    const out: PoolResources = { reporting_workers: this.reporting };
    for (const k of SUMMED) if (this.sums.has(k)) out[k] = this.sums.get(k);
    // Weighted by KV cache size when the workers give it; a plain mean otherwise.
    if (this.kvWeight > 0) out.kvCacheUtilization = round(this.kvWeighted / this.kvWeight);
    else if (this.kvPlain.length > 0) out.kvCacheUtilization = round(this.kvPlain.reduce((a, b) => a + b, 0) / this.kvPlain.length);
    return out;
  }
}

function setOneOrMany(facts: PoolRunnerFacts, key: 'engine' | 'engine_version' | 'sampler_profile_version', values: Set<string>): void {
  if (values.size === 1) facts[key] = [...values][0];
  else if (values.size > 1) facts[key] = [...values].sort();
}

function str(v: unknown): string | undefined {
  return typeof v === 'string' && v !== '' ? v : undefined;
}

function num(v: unknown): number | undefined {
  return typeof v === 'number' && Number.isFinite(v) && v >= 0 ? v : undefined;
}

function obj(v: unknown): Doc | undefined {
  return v && typeof v === 'object' && !Array.isArray(v) ? (v as Doc) : undefined;
}

function round(v: number): number {
  return Math.round(v * 1000) / 1000;
}

import { Gauge, Registry } from 'prom-client';
import { LabelBudget } from './label-budget';

/** What one worker's runner document says, as the fleet reads it at scrape time. */
export interface RunnerFigures {
  pool: string;
  worker: string;
  /** GPU memory in use per GPU (`gpu` is the runner's GPU id, or its ids joined by `,` when it reports one total). */
  gpus: Array<{ gpu: string; usedBytes: number }>;
  /** `resources.kvCacheUtilization`, 0-1, when reported. */
  kvCacheUsage?: number;
}

/**
 * Gauges read from the workers' runner documents (the runner API's `GET /v1/capabilities`) and
 * the cache hit ratio per model. All are computed when scraped: no request pays for them beyond
 * one map update per answer that reported a cache result.
 */
export class RunnerMetrics {
  private collector: (() => RunnerFigures[]) | undefined;
  /** Answers with a reported cache result, by model label: [hits, misses]. */
  private readonly cacheResults = new Map<string, [number, number]>();

  constructor(
    registry: Registry,
    prefix: string,
    private readonly models: LabelBudget,
  ) {
    const registers = [registry];
    const gpuMemory = new Gauge({
      name: `${prefix}gpu_memory_used_bytes`,
      help: "GPU memory in use, from each worker's runner document (resources.gpuMemoryUsedMB), by pool, worker and GPU.",
      labelNames: ['pool', 'worker', 'gpu'],
      registers,
      collect: () => {
        gpuMemory.reset();
        for (const f of this.figures()) for (const g of f.gpus) gpuMemory.set({ pool: f.pool, worker: f.worker, gpu: g.gpu }, g.usedBytes);
      },
    });
    const kvCache = new Gauge({
      name: `${prefix}kv_cache_usage_ratio`,
      help: "KV cache utilisation (0-1), from each worker's runner document (resources.kvCacheUtilization), by pool and worker.",
      labelNames: ['pool', 'worker'],
      registers,
      collect: () => {
        kvCache.reset();
        for (const f of this.figures()) if (f.kvCacheUsage !== undefined) kvCache.set({ pool: f.pool, worker: f.worker }, f.kvCacheUsage);
      },
    });
    const hitRatio = new Gauge({
      name: `${prefix}cache_hit_ratio`,
      help: 'Share of answers whose backend reported a cache hit, among those that reported a hit or a miss, by model (since the gateway started).',
      labelNames: ['model'],
      registers,
      collect: () => {
        for (const [model, [hits, misses]] of this.cacheResults) hitRatio.set({ model }, hits / (hits + misses));
      },
    });
  }

  collectWith(collector: () => RunnerFigures[]): void {
    this.collector = collector;
  }

  /** One answer's cache result (`x-cache-hit`). */
  cacheResult(model: string, hit: boolean): void {
    const label = this.models.label(model);
    let counts = this.cacheResults.get(label);
    if (!counts) this.cacheResults.set(label, (counts = [0, 0]));
    counts[hit ? 0 : 1]++;
  }

  private figures(): RunnerFigures[] {
    return this.collector?.() ?? [];
  }
}

import type { CacheStats } from '../../protocol';
import type { BackendClient } from '../requests/backend-client';
import type { Logger } from '../logger';
import { llamaServerCacheStats, VllmCounters, vllmCacheStats } from './cache-stats';

/** Runners whose cache state the daemon can read (Ollama exposes none). */
export const CACHE_STATS_RUNNERS: readonly string[] = ['llama-server', 'vllm'];

/** A read that takes longer is abandoned (the next ping starts another). */
const READ_TIMEOUT_MS = 2_000;

/**
 * The backend's cache state for `pong.cache_stats` (negotiated). A pong is answered at once with
 * the last figures read; each ping also starts one new read in the background (never two at a
 * time), so the figures are at most one heartbeat old and the heartbeat never waits on the backend.
 */
export class CacheTelemetry {
  private last: CacheStats | undefined;
  private reading = false;
  private counters: VllmCounters | undefined;
  private warned = false;

  constructor(
    private readonly backend: Pick<BackendClient, 'call'>,
    private readonly runner: () => string | undefined,
    private readonly log: Logger,
  ) {}

  /** Whether the backend is one whose cache state can be read (the daemon then asks for `cache_stats`). */
  get supported(): boolean {
    return CACHE_STATS_RUNNERS.includes(this.runner() ?? '');
  }

  get current(): CacheStats | undefined {
    return this.last;
  }

  /** Starts a read unless one is under way; resolves when it is done (tests wait for it). */
  refresh(): Promise<void> {
    if (this.reading || !this.supported) return Promise.resolve();
    this.reading = true;
    const signal = AbortSignal.timeout(READ_TIMEOUT_MS);
    return this.read(signal)
      .then((stats) => {
        // A figure the backend did not give this time keeps its last value.
        if (stats) this.last = { ...this.last, ...stats };
      })
      .catch((err: unknown) => {
        if (!this.warned) this.log.warn('could not read the backend cache state', { error: (err as Error).message });
        this.warned = true;
      })
      .finally(() => (this.reading = false));
  }

  private async read(signal: AbortSignal): Promise<CacheStats | undefined> {
    if (this.runner() === 'vllm') {
      const metrics = await this.getText('/metrics', signal);
      if (metrics === undefined) return undefined;
      const { stats, counters } = vllmCacheStats(metrics, this.counters);
      this.counters = counters;
      return stats;
    }
    const [slots, metrics] = await Promise.all([this.getText('/slots', signal), this.getText('/metrics', signal)]);
    let doc: unknown;
    try {
      doc = slots === undefined ? undefined : JSON.parse(slots);
    } catch {
      doc = undefined;
    }
    return llamaServerCacheStats(doc, metrics);
  }

  /** The document's text, or undefined when the backend does not serve it (404: `--metrics` off, `--no-slots`). */
  private async getText(path: string, signal: AbortSignal): Promise<string | undefined> {
    const res = await this.backend.call('GET', path, signal, undefined, 1 << 20);
    return res.status >= 200 && res.status < 300 ? res.text : undefined;
  }
}

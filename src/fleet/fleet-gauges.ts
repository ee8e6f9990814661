import { Injectable, OnApplicationBootstrap } from '@nestjs/common';
import { ProvidersService } from '../providers/providers.service';
import { MetricsService } from '../observability/metrics.service';
import { Fleet } from './fleet.service';
import { runnerFigures } from './runner-figures';
import type { RunnerFigures } from '../observability/runner-metrics';

/**
 * The fleet's gauges: workers connected per provider (zeros from the start, so dashboards and
 * alerts see zeros, not gaps) and slots busy/held/free, computed when metrics are scraped rather
 * than on every assignment.
 */
@Injectable()
export class FleetGauges implements OnApplicationBootstrap {
  constructor(
    private readonly fleet: Fleet,
    private readonly providers: ProvidersService,
    private readonly metrics: MetricsService,
  ) {
    metrics.collectSlotsWith(() => this.collectSlots());
    metrics.collectRunnersWith(() => this.collectRunners());
  }

  /** GPU memory and KV cache of every connected worker whose runner document reports them. */
  private collectRunners(): RunnerFigures[] {
    const out: RunnerFigures[] = [];
    for (const p of this.providers.all()) {
      for (const w of this.fleet.sessions.ofProvider(p.name)) {
        if (w.remote) continue; // counted by its own replica
        const f = w.runnerCapabilities ? runnerFigures(p.name, w.name, w.runnerCapabilities) : undefined;
        if (f) out.push(f);
      }
    }
    return out;
  }

  onApplicationBootstrap(): void {
    for (const p of this.providers.list()) this.metrics.setWorkersConnected(p.name, this.fleet.localOf(p.name));
  }

  private collectSlots(): void {
    for (const p of this.providers.all()) {
      let busy = 0;
      let held = 0;
      let free = 0;
      for (const w of this.fleet.sessions.ofProvider(p.name)) {
        if (w.remote) continue; // its slots are its own replica's figures
        busy += w.assigned.size;
        held += w.held.size;
        free += w.freeSlots;
      }
      this.metrics.setWorkerSlots(p.name, 'busy', busy);
      this.metrics.setWorkerSlots(p.name, 'held', held);
      this.metrics.setWorkerSlots(p.name, 'free', free);
    }
  }
}

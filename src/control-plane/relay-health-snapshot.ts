import { Injectable } from '@nestjs/common';
import { HealthSnapshot, ProviderHealth } from '../observability/health-snapshot';
import { ProvidersService } from '../providers/providers.service';
import { AdmissionQueue } from '../queue/admission-queue';
import { Fleet } from '../fleet/fleet.service';
import { WorkerDirectory } from '../fleet/worker-index';

/** Feeds GET /health with relay counts: no secrets, no worker addresses. */
@Injectable()
export class RelayHealthSnapshot implements HealthSnapshot {
  private readonly registry: WorkerDirectory;

  constructor(
    fleet: Fleet,
    private readonly queues: AdmissionQueue,
    private readonly providerService: ProvidersService,
  ) {
    this.registry = fleet.directory;
  }

  workersConnected(): number {
    return this.registry.count();
  }

  queueDepth(): number {
    return this.queues.totalDepth();
  }

  modelsLoaded(): number {
    let n = 0;
    for (const model of this.registry.advertisedModels()) {
      for (const w of this.registry.servingExactly(model)) {
        if (!w.draining) {
          n++;
          break;
        }
      }
    }
    return n;
  }

  providers(): ProviderHealth[] {
    return this.providerService.list().map((p) => ({
      name: p.name,
      enabled: p.enabled,
      workers: this.registry.ofProvider(p.name).size,
      queue_depth: this.queues.depth(p.name),
      max_queue_len: p.maxQueueLen,
    }));
  }
}

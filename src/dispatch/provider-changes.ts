import { Injectable, OnApplicationBootstrap } from '@nestjs/common';
import { Errors } from '../common/gateway-error';
import { Fleet } from '../fleet/fleet.service';
import { MetricsService } from '../observability/metrics.service';
import { Provider, ProvidersService } from '../providers/providers.service';
import { AdmissionQueue } from '../queue/admission-queue';
import { Dispatcher } from './dispatcher.service';
import { RelayRequest } from './relay-request';

/**
 * What a change of providers (reload, admin API) means for requests: a deleted provider's queued
 * and running requests fail `provider_deleted` and its workers are closed; a changed one's idle
 * workers may now take queued requests (new capabilities, priority or enabling).
 */
@Injectable()
export class ProviderChanges implements OnApplicationBootstrap {
  constructor(
    private readonly providers: ProvidersService,
    private readonly fleet: Fleet,
    private readonly dispatcher: Dispatcher,
    private readonly queue: AdmissionQueue<RelayRequest>,
    private readonly metrics: MetricsService,
  ) {
    providers.onDeleted((p) => this.deleted(p));
    providers.onChanged((p) => {
      for (const w of [...fleet.sessions.ofProvider(p.name)]) fleet.offer(w);
    });
  }

  /** Every provider's queue gauge exists from the start, so dashboards and alerts see zeros, not gaps. */
  onApplicationBootstrap(): void {
    for (const p of this.providers.list()) this.metrics.setQueueDepth(p.name, this.queue.depth(p.name));
  }

  private deleted(provider: Provider): void {
    this.dispatcher.failWaiting(provider.name, Errors.providerDeleted);
    this.metrics.setQueueDepth(provider.name, 0);
    for (const worker of [...this.fleet.sessions.ofProvider(provider.name)]) {
      worker.draining = true;
      this.dispatcher.failLeases(worker.id, 'graceful_shutdown', Errors.providerDeleted);
      this.fleet.evict(worker);
    }
  }
}

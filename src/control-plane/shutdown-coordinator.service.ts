import { BeforeApplicationShutdown, Inject, Injectable, Logger, OnModuleDestroy } from '@nestjs/common';
import { APP_CONFIG, AppConfig } from '../config';
import { Fleet } from '../fleet/fleet.service';
import type { RelayRequest } from '../dispatch/relay-request';
import { AdmissionQueue } from '../queue/admission-queue';
import { LifecycleState } from '../observability/lifecycle-state';

/**
 * SIGTERM/SIGINT (Nest shutdown hooks): turn unready first, then drain every worker within the
 * configured deadline while the HTTP server still answers in-flight requests.
 */
@Injectable()
export class ShutdownCoordinator implements OnModuleDestroy, BeforeApplicationShutdown {
  private readonly log = new Logger('Shutdown');

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly lifecycle: LifecycleState,
    private readonly fleet: Fleet,
    private readonly queue: AdmissionQueue<RelayRequest>,
  ) {}

  onModuleDestroy(): void {
    this.lifecycle.beginShutdown();
  }

  async beforeApplicationShutdown(signal?: string): Promise<void> {
    this.log.log(`shutting down${signal ? ` on ${signal}` : ''}: draining workers (deadline ${this.config.shutdownDrainTimeoutMs} ms)`);
    await this.shutdown(this.config.shutdownDrainTimeoutMs);
    this.log.log('drain finished');
  }

  /**
   * Refuse new work, drain every worker, and resolve once all workers are gone (or the drain deadline
   * has passed); requests still waiting then end with `server_shutdown` (the Fleet's `drained` event,
   * which the Dispatcher answers).
   */
  async shutdown(timeoutMs: number): Promise<void> {
    this.lifecycle.beginShutdown();
    // Cluster mode: waiting requests still go to other replicas' workers until the deadline.
    const clustered = this.config.cluster.redisUrl !== undefined;
    await this.fleet.drainAll(timeoutMs, clustered ? () => this.queue.totalDepth() > 0 : undefined);
  }
}

import { BeforeApplicationShutdown, Inject, Injectable, Logger, OnModuleDestroy } from '@nestjs/common';
import { APP_CONFIG, AppConfig } from '../config';
import { Errors } from '../common/gateway-error';
import { Dispatcher } from '../dispatch/dispatcher.service';
import { Fleet } from '../fleet/fleet.service';
import { LifecycleState } from '../observability/lifecycle-state';
import { ProvidersService } from '../providers/providers.service';

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
    private readonly dispatcher: Dispatcher,
    private readonly fleet: Fleet,
    private readonly providers: ProvidersService,
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
   * Refuse new work, answer queued requests, drain every worker, and resolve once all workers are
   * gone (or the drain deadline has passed).
   */
  async shutdown(timeoutMs: number): Promise<void> {
    this.lifecycle.beginShutdown();
    for (const p of this.providers.list()) this.dispatcher.failWaiting(p.name, Errors.serverShutdown);
    await this.fleet.drainAll(timeoutMs);
  }
}

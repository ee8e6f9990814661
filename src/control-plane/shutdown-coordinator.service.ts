import { BeforeApplicationShutdown, Inject, Injectable, Logger, OnModuleDestroy } from '@nestjs/common';
import { APP_CONFIG, AppConfig } from '../config';
import { Fleet } from '../fleet/fleet.service';
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
  ) {}

  onModuleDestroy(): void {
    // With a delay, only unready at first: requests the load balancer still sends are served.
    if (this.config.shutdownDelayMs > 0) this.lifecycle.beginUnready();
    else this.lifecycle.beginShutdown();
  }

  async beforeApplicationShutdown(signal?: string): Promise<void> {
    const delay = this.config.shutdownDelayMs;
    if (delay > 0 && !this.lifecycle.isShuttingDown) {
      this.log.log(`unready${signal ? ` on ${signal}` : ''}: still serving for ${delay} ms (SHUTDOWN_DELAY_SECS) before the drain`);
      await new Promise((resolve) => setTimeout(resolve, delay));
    }
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
    await this.fleet.drainAll(timeoutMs);
  }
}

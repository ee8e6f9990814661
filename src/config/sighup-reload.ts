import { Injectable, Logger, OnApplicationBootstrap, OnModuleDestroy } from '@nestjs/common';
import { ConfigReloadService, ReloadRejected } from './config-reload.service';

/**
 * SIGHUP reloads the configuration, like `POST /admin/reload`; the outcome (or every problem of a
 * refused file) is logged, and written to the audit trail with the actor `sighup`. The handler belongs to this application: it is added once the app is
 * up and removed when it closes, so several apps in one process (tests) each manage their own.
 */
@Injectable()
export class SighupReload implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly log = new Logger('ConfigReload');
  private readonly handler = () => {
    this.reload.reloadBySignal('SIGHUP').catch((e: unknown) => {
      // A refused file is logged by the reload; anything else is unexpected but must not kill the process.
      if (!(e instanceof ReloadRejected)) this.log.error(`configuration reload (SIGHUP) failed: ${(e as Error).stack ?? String(e)}`);
    });
  };

  constructor(private readonly reload: ConfigReloadService) {}

  onApplicationBootstrap(): void {
    process.on('SIGHUP', this.handler);
  }

  onModuleDestroy(): void {
    process.off('SIGHUP', this.handler);
  }
}

import { Module, OnModuleDestroy } from '@nestjs/common';
import { APP_CONFIG, AppConfig } from '../config';
import { CLOCK, Clock } from '../common/clock';
import { AdminAuth } from './admin-auth';
import { AdminGuard } from './admin.guard';
import { FailedAuthLimiter } from './failed-auth-limiter';
import { SsoController } from './sso.controller';
import { SsoService } from './sso.service';

@Module({
  controllers: [SsoController],
  providers: [
    SsoService,
    AdminAuth,
    AdminGuard,
    {
      provide: FailedAuthLimiter,
      inject: [APP_CONFIG, CLOCK],
      useFactory: (config: AppConfig, clock: Clock) => new FailedAuthLimiter(config.authLimiter, clock),
    },
  ],
  exports: [AdminAuth, AdminGuard, FailedAuthLimiter, SsoService],
})
export class AuthModule implements OnModuleDestroy {
  constructor(private readonly limiter: FailedAuthLimiter) {}
  onModuleDestroy(): void {
    this.limiter.stop();
  }
}

import { Module, OnModuleDestroy } from '@nestjs/common';
import { APP_CONFIG, AppConfig } from '../config';
import { systemClock } from '../common/clock';
import { AdminGuard } from './admin.guard';
import { FailedAuthLimiter } from './failed-auth-limiter';

@Module({
  providers: [
    AdminGuard,
    {
      provide: FailedAuthLimiter,
      inject: [APP_CONFIG],
      useFactory: (config: AppConfig) => new FailedAuthLimiter(config.authLimiter, systemClock),
    },
  ],
  exports: [AdminGuard, FailedAuthLimiter],
})
export class AuthModule implements OnModuleDestroy {
  constructor(private readonly limiter: FailedAuthLimiter) {}
  onModuleDestroy(): void {
    this.limiter.stop();
  }
}

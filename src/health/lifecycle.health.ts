import { Injectable } from '@nestjs/common';
import { HealthIndicatorResult, HealthIndicatorService } from '@nestjs/terminus';
import { LifecycleState } from '../observability/lifecycle-state';

/** Terminus indicator: up while the process accepts new work, down once shutdown has begun. */
@Injectable()
export class LifecycleHealthIndicator {
  constructor(
    private readonly indicators: HealthIndicatorService,
    private readonly lifecycle: LifecycleState,
  ) {}

  acceptingTraffic<K extends string>(key: K): HealthIndicatorResult<K> {
    const check = this.indicators.check(key);
    return this.lifecycle.isUnready ? check.down({ message: 'shutting down' }) : check.up();
  }
}

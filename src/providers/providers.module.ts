import { Module } from '@nestjs/common';
import { PoolStats } from './pool-stats';
import { ProvidersService } from './providers.service';

@Module({ providers: [ProvidersService, PoolStats], exports: [ProvidersService, PoolStats] })
export class ProvidersModule {}

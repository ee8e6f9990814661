import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { PoolStats } from './pool-stats';
import { ProviderEntity } from './provider.entity';
import { ProviderStore } from './provider-store';
import { TypeOrmProviderStore } from './provider-store.typeorm';
import { ProvidersService } from './providers.service';
import { ProviderSync } from './provider-sync';

@Module({
  imports: [TypeOrmModule.forFeature([ProviderEntity])],
  providers: [ProvidersService, ProviderSync, PoolStats, TypeOrmProviderStore, { provide: ProviderStore, useExisting: TypeOrmProviderStore }],
  exports: [ProvidersService, PoolStats, ProviderStore],
})
export class ProvidersModule {}

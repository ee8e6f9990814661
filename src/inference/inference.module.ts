import { Module } from '@nestjs/common';
import { APP_FILTER } from '@nestjs/core';
import { DispatchModule } from '../dispatch/dispatch.module';
import { RegistryModule } from '../registry/registry.module';
import { ProvidersModule } from '../providers/providers.module';
import { DialectExceptionFilter } from './dialect-exception.filter';
import { InferenceController } from './inference.controller';
import { InferenceService } from './inference.service';

@Module({
  imports: [DispatchModule, RegistryModule, ProvidersModule],
  controllers: [InferenceController],
  providers: [InferenceService, { provide: APP_FILTER, useClass: DialectExceptionFilter }],
})
export class InferenceModule {}

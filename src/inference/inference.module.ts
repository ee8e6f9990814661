import { Module } from '@nestjs/common';
import { APP_FILTER } from '@nestjs/core';
import { DispatchModule } from '../dispatch/dispatch.module';
import { RoutingModule } from '../routing/routing.module';
import { TenancyModule } from '../tenancy/tenancy.module';
import { ApiKeysModule } from '../api-keys/api-keys.module';
import { DialectExceptionFilter } from './dialect-exception.filter';
import { InferenceController } from './inference.controller';
import { InferenceService } from './inference.service';

@Module({
  imports: [DispatchModule, RoutingModule, TenancyModule, ApiKeysModule],
  controllers: [InferenceController],
  providers: [InferenceService, { provide: APP_FILTER, useClass: DialectExceptionFilter }],
})
export class InferenceModule {}

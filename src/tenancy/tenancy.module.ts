import { Module } from '@nestjs/common';
import { TenantLimits } from './tenant-limits.service';
import { TenantsService } from './tenants.service';

@Module({ providers: [TenantsService, TenantLimits], exports: [TenantsService, TenantLimits] })
export class TenancyModule {}

import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { TenantEntity } from './tenant.entity';
import { AuthModule } from '../auth/auth.module';
import { TenantLimits } from './tenant-limits.service';
import { TenantStore } from './tenant-store';
import { TypeOrmTenantStore } from './tenant-store.typeorm';
import { TenantsController } from './tenants.controller';
import { TenantsService } from './tenants.service';
import { TenantSync } from './tenant-sync';

/** Tenant settings (config file + `tenants` table), `/admin/tenants` and admission limits. Registers its own entities; needs the global DatabaseModule (the DataSource). */
@Module({
  imports: [AuthModule, TypeOrmModule.forFeature([TenantEntity])],
  controllers: [TenantsController],
  providers: [TenantsService, TenantSync, TenantLimits, TypeOrmTenantStore, { provide: TenantStore, useExisting: TypeOrmTenantStore }],
  exports: [TenantsService, TenantLimits],
})
export class TenancyModule {}

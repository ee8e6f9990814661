import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { ApiKeyEntity } from './api-key.entity';
import { AuthModule } from '../auth/auth.module';
import { TenancyModule } from '../tenancy/tenancy.module';
import { ApiKeyStore } from './api-key-store';
import { TypeOrmApiKeyStore } from './api-key-store.typeorm';
import { ApiKeysController } from './api-keys.controller';
import { ApiKeysService } from './api-keys.service';
import { ApiKeySync } from './api-key-sync';

/** Client API keys: verification for the inference routes and `/admin/keys`. Registers its own entities; needs the global DatabaseModule (the DataSource). */
@Module({
  imports: [AuthModule, TenancyModule, TypeOrmModule.forFeature([ApiKeyEntity])],
  controllers: [ApiKeysController],
  providers: [ApiKeysService, ApiKeySync, TypeOrmApiKeyStore, { provide: ApiKeyStore, useExisting: TypeOrmApiKeyStore }],
  exports: [ApiKeysService],
})
export class ApiKeysModule {}

import { Module } from '@nestjs/common';
import { AuthModule } from '../auth/auth.module';
import { TenancyModule } from '../tenancy/tenancy.module';
import { ApiKeyStore } from './api-key-store';
import { TypeOrmApiKeyStore } from './api-key-store.typeorm';
import { ApiKeysController } from './api-keys.controller';
import { ApiKeysService } from './api-keys.service';

/** Client API keys: verification for the inference routes and `/admin/keys`. Needs the global DatabaseModule. */
@Module({
  imports: [AuthModule, TenancyModule],
  controllers: [ApiKeysController],
  providers: [ApiKeysService, TypeOrmApiKeyStore, { provide: ApiKeyStore, useExisting: TypeOrmApiKeyStore }],
  exports: [ApiKeysService],
})
export class ApiKeysModule {}

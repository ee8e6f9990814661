import { Module } from '@nestjs/common';
import { AuthModule } from '../auth/auth.module';
import { AuditController } from './audit.controller';
import { AuditLog } from './audit-log';
import { AuditRetention } from './audit-retention';
import { TypeOrmAuditLog } from './audit-log.typeorm';
import { AuditTrail } from './audit-trail';
import { GovernanceService } from './governance.service';
import { NonceStore } from './nonce-store';
import { TypeOrmNonceStore } from './nonce-store.typeorm';

/**
 * Governed lifecycle operations: op-token verification (key, signers, persisted nonces), the
 * audit trail and `GET /admin/audit`. Needs the global DatabaseModule.
 */
@Module({
  imports: [AuthModule],
  controllers: [AuditController],
  providers: [
    GovernanceService,
    AuditTrail,
    AuditRetention,
    TypeOrmNonceStore,
    { provide: NonceStore, useExisting: TypeOrmNonceStore },
    TypeOrmAuditLog,
    { provide: AuditLog, useExisting: TypeOrmAuditLog },
  ],
  exports: [GovernanceService, AuditTrail],
})
export class GovernanceModule {}

import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { AuditEntryEntity } from './audit-entry.entity';
import { OpTokenNonceEntity } from './op-token-nonce.entity';
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
 * audit trail and `GET /admin/audit`. Registers its own entities; needs the global DatabaseModule (the DataSource).
 */
@Module({
  imports: [AuthModule, TypeOrmModule.forFeature([AuditEntryEntity, OpTokenNonceEntity])],
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

import { Global, Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { AuditEntryEntity } from './audit-entry.entity';
import { OpTokenNonceEntity } from './op-token-nonce.entity';
import { AuthModule } from '../auth/auth.module';
import { AdminAudit } from './admin-audit';
import { AdminAuditInterceptor } from './admin-audit.interceptor';
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
 * Global: every controller with an `@Audited` admin route uses AdminAuditInterceptor, which needs AdminAudit.
 */
@Global()
@Module({
  imports: [AuthModule, TypeOrmModule.forFeature([AuditEntryEntity, OpTokenNonceEntity])],
  providers: [
    GovernanceService,
    AuditTrail,
    AdminAudit,
    AdminAuditInterceptor,
    AuditRetention,
    TypeOrmNonceStore,
    { provide: NonceStore, useExisting: TypeOrmNonceStore },
    TypeOrmAuditLog,
    { provide: AuditLog, useExisting: TypeOrmAuditLog },
  ],
  exports: [GovernanceService, AuditTrail, AdminAudit, AdminAuditInterceptor],
})
export class GovernanceModule {}

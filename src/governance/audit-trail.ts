import { BeforeApplicationShutdown, Injectable, Logger } from '@nestjs/common';
import { SerialWriteQueue } from '../registry/serial-write-queue';
import { AuditEntry, AuditLog, AuditQuery, AuditRecord } from './audit-log';

/**
 * The lifecycle audit trail. Rows are appended in order behind the caller (a refusal is answered
 * at once; an outcome reported in a worker's frame never waits on the database); a listing waits
 * for the rows appended before it, so this gateway's own rows are always in it.
 */
@Injectable()
export class AuditTrail implements BeforeApplicationShutdown {
  private readonly log = new Logger('AuditTrail');
  private readonly writes = new SerialWriteQueue(this.log);

  constructor(private readonly store: AuditLog) {}

  record(entry: AuditEntry): void {
    this.writes.enqueue(`audit row (${entry.operation} ${entry.outcome})`, () => this.store.append(entry));
  }

  async list(query: AuditQuery): Promise<AuditRecord[]> {
    await this.writes.whenIdle();
    return this.store.list(query);
  }

  async beforeApplicationShutdown(): Promise<void> {
    await this.writes.whenIdle();
  }
}

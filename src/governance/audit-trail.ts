import { BeforeApplicationShutdown, Inject, Injectable, Logger, Optional } from '@nestjs/common';
import { CLOCK, Clock, systemClock } from '../common/clock';
import { SerialWriteQueue } from '../common/serial-write-queue';
import { AuditEntry, AuditLog, AuditQuery, AuditRecord } from './audit-log';
import { UnauthenticatedRefusals } from './unauthenticated-refusals';

/** Pending rows of requests without the admin token, at most (beyond, they are dropped and logged). */
export const MAX_PENDING_UNAUTHENTICATED = 1000;

/**
 * The lifecycle audit trail. Rows are appended in order behind the caller (a refusal is answered
 * at once; an outcome reported in a worker's frame never waits on the database); a listing waits
 * for the rows appended before it, so this gateway's own rows are always in it. Rows of requests
 * refused for want of the admin token queue apart, in a smaller queue: anyone can send those, and
 * a flood of them must not fill the queue the admin's operations are recorded through. They are
 * also aggregated: one row per client address, operation, code and minute (unauthenticated-refusals.ts).
 */
@Injectable()
export class AuditTrail implements BeforeApplicationShutdown {
  private readonly log = new Logger('AuditTrail');
  private readonly writes = new SerialWriteQueue(this.log);
  private readonly unauthenticated = new SerialWriteQueue(this.log, MAX_PENDING_UNAUTHENTICATED);

  private readonly refusals: UnauthenticatedRefusals;

  constructor(
    private readonly store: AuditLog,
    @Optional() @Inject(CLOCK) clock: Clock = systemClock,
  ) {
    this.refusals = new UnauthenticatedRefusals(clock, (entry) =>
      this.unauthenticated.enqueue(`audit row (${entry.operation} ${entry.outcome}, no admin token)`, () => this.store.append(entry)),
    );
  }

  record(entry: AuditEntry): void {
    this.writes.enqueue(`audit row (${entry.operation} ${entry.outcome})`, () => this.store.append(entry));
  }

  /**
   * Appends the row and resolves once it is stored, rejecting when it cannot be (store error, or
   * the queue is full): an operation's `accepted` row must exist before anything reaches a worker.
   * Queued behind the earlier rows, so the trail keeps its order.
   */
  recordDurably(entry: AuditEntry): Promise<void> {
    return new Promise((resolve, reject) => {
      const queued = this.writes.enqueue(`audit row (${entry.operation} ${entry.outcome})`, async () => {
        try {
          await this.store.append(entry);
          resolve();
        } catch (e) {
          reject(e);
          throw e;
        }
      });
      if (!queued) reject(new Error('the audit write queue is full'));
    });
  }

  /** A request refused at the admin token check (no or a wrong token), from client `address`: aggregated. */
  recordUnauthenticated(entry: AuditEntry, address: string): void {
    this.refusals.add(entry, address);
  }

  async list(query: AuditQuery): Promise<AuditRecord[]> {
    this.refusals.flush();
    await Promise.all([this.writes.whenIdle(), this.unauthenticated.whenIdle()]);
    return this.store.list(query);
  }

  async beforeApplicationShutdown(): Promise<void> {
    this.refusals.flush();
    await Promise.all([this.writes.whenIdle(), this.unauthenticated.whenIdle()]);
  }
}

import { Counter, Gauge, Registry } from 'prom-client';

const PREFIX = 'switchboard_';

/** Why usage records were lost: the buffer was full (oldest dropped) or their batch kept failing. */
export type UsageDropReason = 'buffer_full' | 'write_failed';
/** Why the admin token check refused a request. A fixed set, so a client can never grow the label's cardinality. */
export type AdminAuthFailureReason = 'missing' | 'invalid' | 'rate_limited' | 'disabled';
/** Why an API-key check refused a request. */
export type ClientAuthFailureReason = 'missing' | 'invalid' | 'revoked' | 'disabled' | 'expired' | 'malformed' | 'rate_limited' | 'tenant_has_keys';

/** The usage recorder's series: records written, lost, and waiting in memory (`MetricsService.usage`). */
export class UsageMetrics {
  private readonly written: Counter;
  private readonly dropped: Counter<'reason'>;
  private readonly buffered: Gauge;
  /** Reads the usage recorder's buffer size at scrape time. */
  private bufferCollector: (() => number) | undefined;

  constructor(registers: Registry[]) {
    this.written = new Counter({ name: `${PREFIX}usage_records_written_total`, help: 'Usage records written to the database.', registers });
    this.dropped = new Counter({
      name: `${PREFIX}usage_records_dropped_total`,
      help: 'Usage records lost: buffer_full (the database fell behind, the oldest were dropped) or write_failed (their batch failed repeatedly).',
      labelNames: ['reason'],
      registers,
    });
    // Both series exist from the start, so an alert on their increase sees zeros, not gaps.
    for (const reason of ['buffer_full', 'write_failed'] as const) this.dropped.inc({ reason }, 0);
    this.buffered = new Gauge({
      name: `${PREFIX}usage_records_buffered`,
      help: 'Usage records waiting in memory to be written.',
      registers,
      collect: () => {
        if (this.bufferCollector) this.buffered.set(this.bufferCollector());
      },
    });
  }

  recordsWritten(count: number): void {
    if (count > 0) this.written.inc(count);
  }

  recordsDropped(reason: UsageDropReason, count: number): void {
    if (count > 0) this.dropped.inc({ reason }, count);
  }

  /** Registers what reports the usage buffer's size whenever metrics are scraped. */
  collectBufferWith(collector: () => number): void {
    this.bufferCollector = collector;
  }
}

/** Refused authentications, by who was refused and why (`MetricsService.auth`). */
export class AuthMetrics {
  private readonly workerFailures: Counter<'reason'>;
  private readonly adminFailures: Counter<'reason'>;
  private readonly clientFailures: Counter<'reason'>;

  constructor(registers: Registry[]) {
    this.workerFailures = new Counter({
      name: `${PREFIX}worker_auth_failures_total`,
      help: 'Worker connections refused during the handshake, by reason.',
      labelNames: ['reason'],
      registers,
    });
    this.adminFailures = new Counter({
      name: `${PREFIX}admin_auth_failures_total`,
      help: 'Admin API requests refused at the admin token check, by reason (missing, invalid, rate_limited, disabled).',
      labelNames: ['reason'],
      registers,
    });
    this.clientFailures = new Counter({
      name: `${PREFIX}client_auth_failures_total`,
      help: 'Client requests refused by API-key authentication, by reason (missing, invalid, revoked, disabled, expired, malformed, rate_limited, tenant_has_keys).',
      labelNames: ['reason'],
      registers,
    });
  }

  workerFailure(reason: string): void {
    this.workerFailures.inc({ reason });
  }

  /** A client request refused by API-key authentication (see ApiKeysService for the reasons). */
  clientFailure(reason: ClientAuthFailureReason): void {
    this.clientFailures.inc({ reason });
  }

  /** A request refused at the admin token check (see auth/admin-auth.ts). */
  adminFailure(reason: AdminAuthFailureReason): void {
    this.adminFailures.inc({ reason });
  }
}

import { Errors } from '../common/gateway-error';

/**
 * The per-tenant stored-bytes quota of `POST /v1/artifacts` (`artifacts.max_bytes_per_tenant`):
 * artifacts are kept for `retention_days`, so without it one tenant could fill the database a
 * megabyte at a time. Stored bytes come from the store (one indexed SUM per POST: this is not the
 * inference hot path); artifacts being written are reserved in memory first, so concurrent POSTs
 * cannot each see the same room and together overshoot it.
 */
export class ArtifactQuota {
  private readonly reserved = new Map<string, number>();

  constructor(
    private readonly limit: number,
    private readonly storedBytes: (tenant: string) => Promise<number>,
  ) {}

  /**
   * Reserves `size` bytes for `tenant` or throws `artifact_quota_exceeded`; call the returned
   * function once the artifact is written (or its write failed).
   */
  async reserve(tenant: string, size: number): Promise<() => void> {
    if (this.limit <= 0) return () => undefined;
    this.add(tenant, size);
    let released = false;
    const release = () => {
      if (!released) this.add(tenant, -size);
      released = true;
    };
    try {
      const stored = await this.storedBytes(tenant);
      const inFlight = this.reserved.get(tenant) ?? 0; // this one included
      if (stored + inFlight > this.limit) throw Errors.artifactQuotaExceeded(this.limit, stored + inFlight - size, size);
      return release;
    } catch (e) {
      release();
      throw e;
    }
  }

  private add(tenant: string, bytes: number): void {
    const next = (this.reserved.get(tenant) ?? 0) + bytes;
    if (next <= 0) this.reserved.delete(tenant);
    else this.reserved.set(tenant, next);
  }
}

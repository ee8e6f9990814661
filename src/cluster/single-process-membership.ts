import { Membership, MembershipChange, ReplicaRecord } from './membership.port';

/**
 * One process, no cluster: the member list is this replica alone, nothing is stored, no timer
 * runs, so the embedded default costs nothing.
 */
export class SingleProcessMembership extends Membership {
  readonly enabled = false;
  private self: ReplicaRecord;

  constructor(
    readonly replicaId: string,
    version: string,
    startedAt: number,
    private readonly now: () => number,
  ) {
    super();
    this.self = { id: replicaId, advertise_url: '', started_at: startedAt, last_seen: startedAt, version };
  }

  advertiseUrl(): string | undefined {
    return this.self.advertise_url || undefined;
  }

  members(): ReplicaRecord[] {
    return [{ ...this.self, last_seen: this.now() }];
  }

  degraded(): boolean {
    return false;
  }

  async refresh(): Promise<void> {}

  onChange(_listener: (change: MembershipChange) => void): () => void {
    // Alone, the list never changes.
    return () => undefined;
  }

  start(advertiseUrl: string): void {
    this.self = { ...this.self, advertise_url: advertiseUrl };
  }

  async stop(): Promise<void> {}
}

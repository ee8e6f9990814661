import type { Membership, ReplicaRecord } from '../cluster/membership.port';

/**
 * What a task's record in Redis names: a replica **process**, `<replica id>@<started_at>`. A
 * replica restarted under the same id (stable ids are the advice) is another process: the tasks
 * of the one before are gone, and their records name a holder that no longer lives.
 */
export function selfHolder(membership: Membership): string {
  const self = membership.members().find((m) => m.id === membership.replicaId);
  return `${membership.replicaId}@${self?.started_at ?? 0}`;
}

/** The live member a record names, if it is still a member (the same process). */
export function liveHolder(membership: Membership, holder: string): ReplicaRecord | undefined {
  const at = holder.lastIndexOf('@');
  const id = holder.slice(0, at);
  const startedAt = Number(holder.slice(at + 1));
  return membership.members().find((m) => m.id === id && m.started_at === startedAt);
}

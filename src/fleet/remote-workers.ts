import type { Fleet } from './fleet.service';
import { PublishedWorker } from './published-worker';
import { WorkerChannel, WorkerSession } from './worker-session';

/** Builds the channel through which requests reach a worker connected to another replica (the internal link). */
export type RemoteChannelFactory = (replica: string, workerId: string, session: () => WorkerSession | undefined) => WorkerChannel;

/**
 * Cluster mode: the workers connected to other replicas, kept in this replica's Fleet index as
 * remote sessions and in step with what their replicas publish. Routing, `/v1/models` and the
 * operators' views read them like local ones; a lease on one sends its request over the internal
 * link (the channel), where the worker's own replica grants the real slot.
 */
export class RemoteWorkers {
  private readonly byReplica = new Map<string, Map<string, WorkerSession>>();

  constructor(
    private readonly fleet: Fleet,
    private readonly channelFor: RemoteChannelFactory,
    private readonly now: () => number,
  ) {}

  /**
   * Applies what `replica` published: `workers` added or updated, `removed` gone; with `full`, any
   * worker of that replica not in `workers` is gone too.
   */
  apply(replica: string, workers: readonly PublishedWorker[], removed: readonly string[], full: boolean): void {
    let known = this.byReplica.get(replica);
    if (!known) this.byReplica.set(replica, (known = new Map()));
    const seen = full ? new Set<string>() : undefined;
    for (const data of workers) {
      if (data.replica !== replica) continue;
      seen?.add(data.id);
      const existing = known.get(data.id);
      if (existing) this.update(existing, data);
      else if (!this.fleet.sessions.get(data.id)) known.set(data.id, this.add(data));
    }
    for (const id of removed) this.remove(known, id);
    if (seen) for (const id of [...known.keys()]) if (!seen.has(id)) this.remove(known, id);
    if (known.size === 0) this.byReplica.delete(replica);
  }

  /**
   * The replica left the cluster (or this one lost Redis): its workers are gone from here. With
   * `abandon` (it left: it is dead or unreachable) the requests forwarded to it end now, rather than
   * wait on a link that may never answer (a host down sends no reset).
   */
  dropReplica(replica: string, abandon = false): void {
    const known = this.byReplica.get(replica);
    if (!known) return;
    if (abandon) for (const session of known.values()) session.channel.abandon?.();
    for (const id of [...known.keys()]) this.remove(known, id);
    this.byReplica.delete(replica);
  }

  dropAll(): void {
    for (const replica of [...this.byReplica.keys()]) this.dropReplica(replica);
  }

  /** Replicas whose workers are known here. */
  replicas(): string[] {
    return [...this.byReplica.keys()];
  }

  /** The worker's replica had no free slot: count it full until that replica publishes it again. */
  markFull(session: WorkerSession): void {
    session.externalLoad = session.maxConcurrent;
  }

  private add(data: PublishedWorker): WorkerSession {
    const session: WorkerSession = new WorkerSession(
      {
        id: data.id,
        provider: data.provider,
        name: data.name,
        models: data.models,
        maxConcurrent: data.max_concurrent,
        remoteAddress: data.replica,
        connectedAt: data.connected_at,
        capabilities: data.capabilities,
        endpoints: data.endpoints ?? undefined,
        declaredPriority: data.priority ?? undefined,
      },
      this.channelFor(data.replica, data.id, () => session),
    );
    session.replica = data.replica;
    session.features = new Set(data.features);
    session.runner = data.runner;
    this.setState(session, data);
    session.remote = true;
    for (const model of data.held_out) this.fleet.sessions.holdOut(session, model);
    // Into the index routing, `/v1/models` and operators read; then offered to the queue like a local worker.
    this.fleet.sessions.add(session);
    this.fleet.offer(session);
    return session;
  }

  private update(session: WorkerSession, data: PublishedWorker): void {
    const models = session.advertisedModels();
    if (models.length !== data.models.length || models.some((m, i) => m !== data.models[i])) {
      this.fleet.sessions.setModels(session, data.models);
    }
    session.capabilities = data.capabilities;
    session.endpoints = data.endpoints ? new Set(data.endpoints) : undefined;
    session.declaredPriority = data.priority ?? undefined;
    session.features = new Set(data.features);
    session.runner = data.runner;
    const held = new Set(data.held_out);
    for (const model of [...session.heldOut]) if (!held.has(model)) this.fleet.sessions.releaseHold(session, model);
    for (const model of held) if (!session.heldOut.has(model)) this.fleet.sessions.holdOut(session, model);
    this.setState(session, data);
    this.fleet.offer(session);
  }

  private setState(session: WorkerSession, data: PublishedWorker): void {
    session.draining = data.draining;
    session.cacheStats = data.cache_stats;
    // An age, not a date: the replicas' clocks need not agree.
    session.lastSeenAt = this.now() - data.seen_ago_ms;
    // The published load counts this replica's forwarded requests too; the rest is other replicas' work.
    session.externalLoad = Math.max(0, data.load - session.assigned.size - session.held.size);
  }

  /**
   * Gone from its replica's list (or its replica gone from here). Requests this replica forwarded to
   * it are not over: each runs on its own link to the worker's replica, which may still be finishing
   * them (a graceful stop) or whose loss ends each of them on that link (requeued before the first
   * byte). So the worker takes no new work and leaves the index once the last of them has ended.
   */
  private remove(known: Map<string, WorkerSession>, id: string): void {
    const session = known.get(id);
    if (!session) return;
    known.delete(id);
    if (session.assigned.size === 0) return this.fleet.detach(session);
    // Busy, not draining: a draining worker would make requests for its model fail as if no healthy
    // worker were left, while it is only moving (it will reconnect, to this replica or another).
    this.markFull(session);
    const stop = this.fleet.watchReleases(session, () => {
      if (session.assigned.size > 0) return;
      stop();
      this.fleet.detach(session);
    });
  }
}

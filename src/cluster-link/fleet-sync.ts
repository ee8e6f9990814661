import { Logger } from '@nestjs/common';
import type { Clock, TimerHandle } from '../common/clock';
import type { FleetBoard, FleetBoardMessage } from '../cluster/fleet-board';
import type { Membership } from '../cluster/membership.port';
import type { Fleet } from '../fleet/fleet.service';
import { publishWorker, PublishedWorker, readPublishedWorker } from '../fleet/published-worker';
import type { RemoteWorkers } from '../fleet/remote-workers';
import type { WorkerSession } from '../fleet/worker-session';
import type { AdmissionQueue } from '../queue/admission-queue';
import { readQueueDepths } from '../queue/remote-depths';
import { LINK_VERSION, speaksLink } from './link-protocol';

const log = new Logger('ClusterLink');

/** How long a replica that left is not taken back on its own word (messages in flight when it left). */
const DEPARTED_MS = 2000;

/**
 * Keeps every replica's view of the cluster's workers: this replica publishes its own workers
 * (changes batched per `flushMs`, everything every `fullEveryMs` and whenever a replica says
 * hello) and applies what the others publish. Nothing here is on a request's path: a lease only
 * marks its worker changed; the board is written from a timer.
 */
export class FleetSync {
  private readonly changed = new Set<WorkerSession>();
  private readonly gone = new Set<string>();
  private queueChanged = false;
  private flushTimer: TimerHandle | undefined;
  private fullTimer: TimerHandle | undefined;
  private stopped = false;
  /** Replicas that left lately: a message of theirs still on its way must not bring their workers back. */
  private readonly departed = new Map<string, number>();
  /** Replicas whose link this one does not speak (another release), with the version they published. */
  private readonly foreign = new Map<string, string>();

  constructor(
    private readonly fleet: Fleet,
    private readonly remote: RemoteWorkers,
    private readonly board: FleetBoard,
    private readonly queue: AdmissionQueue,
    private readonly membership: Membership,
    private readonly clock: Clock,
    private readonly options: { replicaId: string; flushMs: number; fullEveryMs: number },
  ) {}

  start(): void {
    this.fleet.onLocalChange = (w) => this.mark(w);
    this.queue.onDepthChange = () => {
      this.queueChanged = true;
      this.schedule();
    };
    this.fleet.on('workerJoined', ({ worker }) => !worker.remote && this.mark(worker));
    this.fleet.on('workerGone', ({ worker }) => {
      if (worker.remote) return;
      this.changed.delete(worker);
      this.gone.add(worker.id);
      this.schedule();
    });
    this.board.onMessage((m) => this.receive(m));
    this.board.onReady(() => {
      this.board.publish({ from: this.options.replicaId, kind: 'hello' });
      this.publishFull();
    });
    this.membership.onChange(({ joined, left }) => {
      for (const replica of joined) this.departed.delete(replica);
      for (const replica of left) this.foreign.delete(replica);
      // Its messages count only from now on: ask everyone for their lists (its own included).
      if (joined.length > 0 && !this.membership.degraded()) this.board.publish({ from: this.options.replicaId, kind: 'hello' });
      // Alone (Redis lost): other replicas' workers cannot be reached through a board that is gone.
      if (this.membership.degraded()) {
        this.queue.elsewhere.clear();
        return this.remote.dropAll();
      }
      for (const replica of left) {
        this.remote.dropReplica(replica, true);
        this.queue.elsewhere.set(replica, undefined);
        this.departed.set(replica, this.clock.now());
      }
    });
    this.board.start();
    this.fullTimer = this.clock.setInterval(() => this.publishFull(), this.options.fullEveryMs);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.fullTimer) this.clock.clearInterval(this.fullTimer);
    if (this.flushTimer) this.clock.clearTimeout(this.flushTimer);
    // Leaving: the others drop this replica's workers now rather than at its membership timeout.
    this.board.publish({ from: this.options.replicaId, kind: 'full', workers: [], queue: { providers: {}, tenants: {} }, link: LINK_VERSION });
    await this.board.stop();
  }

  private mark(worker: WorkerSession): void {
    this.changed.add(worker);
    this.schedule();
  }

  private schedule(): void {
    if (this.flushTimer !== undefined || this.stopped) return;
    this.flushTimer = this.clock.setTimeout(() => this.flush(), this.options.flushMs);
  }

  private flush(): void {
    this.flushTimer = undefined;
    const now = this.clock.now();
    const workers: PublishedWorker[] = [];
    const leaving = this.fleet.closing;
    for (const w of this.changed) if (this.fleet.sessions.get(w.id) === w) workers.push(publishWorker(w, now, leaving));
    const removed = [...this.gone];
    const queue = this.queueChanged ? this.queue.depths() : undefined;
    this.changed.clear();
    this.gone.clear();
    this.queueChanged = false;
    if (workers.length === 0 && removed.length === 0 && !queue) return;
    this.board.publish({ from: this.options.replicaId, kind: 'delta', workers, removed, ...(queue ? { queue } : {}), link: LINK_VERSION });
  }

  private publishFull(): void {
    if (this.stopped) return;
    const now = this.clock.now();
    const workers: PublishedWorker[] = [];
    const leaving = this.fleet.closing;
    for (const w of this.fleet.sessions.all()) if (!w.remote) workers.push(publishWorker(w, now, leaving));
    this.board.publish({ from: this.options.replicaId, kind: 'full', workers, queue: this.queue.depths(), link: LINK_VERSION });
  }

  private receive(m: FleetBoardMessage): void {
    // Alone (Redis lost for membership) or from a replica not known to be alive: its workers could
    // not be reached, or would never be removed. A replica's hello is answered once it is a member.
    if (this.membership.degraded() || !this.membership.members().some((r) => r.id === m.from)) return;
    if (m.kind === 'hello') return this.publishFull();
    const left = this.departed.get(m.from);
    if (left !== undefined) {
      if (this.clock.now() - left < DEPARTED_MS) return;
      this.departed.delete(m.from);
    }
    // Another release's link (a rolling upgrade across a change of it): its workers could not be
    // sent a request from here, so they are not this replica's to route to; its queue still counts.
    if (!speaksLink(m.link)) {
      this.foreignLink(m.from, m.link);
      return this.readQueue(m);
    }
    if (this.foreign.delete(m.from)) {
      log.log(`replica ${m.from} now speaks link version ${LINK_VERSION}: its workers are used from here again`);
      // A delta names only what changed: its whole list comes with the full a hello asks for.
      if (m.kind !== 'full') this.board.publish({ from: this.options.replicaId, kind: 'hello' });
    }
    const workers: PublishedWorker[] = [];
    let malformed = 0;
    for (const raw of m.workers ?? []) {
      const w = readPublishedWorker(raw);
      if (w) workers.push(w);
      else malformed++;
    }
    if (malformed > 0) log.warn(`replica ${m.from} published ${malformed} malformed worker(s); ignored`);
    this.remote.apply(m.from, workers, m.removed ?? [], m.kind === 'full');
    this.readQueue(m);
  }

  private readQueue(m: FleetBoardMessage): void {
    if (m.queue !== undefined) this.queue.elsewhere.set(m.from, readQueueDepths(m.queue), this.clock.now());
  }

  private foreignLink(replica: string, version: unknown): void {
    const shown = typeof version === 'number' ? String(version) : typeof version === 'string' ? JSON.stringify(version.slice(0, 32)) : typeof version;
    if (this.foreign.get(replica) === shown) return;
    this.foreign.set(replica, shown);
    this.remote.dropReplica(replica, true);
    log.warn(
      `replica ${replica} speaks link version ${shown}, this one ${LINK_VERSION} (another release): its workers are not used from here until both run the same link`,
    );
  }
}

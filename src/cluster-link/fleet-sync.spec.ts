import { FakeClock } from '../../test/support/fake-clock';
import { NoWorkerRecords, RecordingChannel } from '../../test/support/dispatch-harness';
import { publishedWorker } from '../../test/support/published-worker';
import type { FleetBoard, FleetBoardMessage } from '../cluster/fleet-board';
import type { Membership, MembershipChange, ReplicaRecord } from '../cluster/membership.port';
import { loadConfig } from '../config';
import { Fleet } from '../fleet/fleet.service';
import { RemoteWorkers } from '../fleet/remote-workers';
import { LifecycleState } from '../observability/lifecycle-state';
import { MetricsService } from '../observability/metrics.service';
import { AdmissionQueue } from '../queue/admission-queue';
import { FleetSync } from './fleet-sync';
import { LINK_VERSION } from './link-protocol';

/** The board's two ends in memory: what this replica published, and a way to deliver the others' messages. */
class HandBoard implements FleetBoard {
  readonly sent: FleetBoardMessage[] = [];
  private listener: (m: FleetBoardMessage) => void = () => undefined;
  publish(m: FleetBoardMessage): void {
    this.sent.push(m);
  }
  onMessage(listener: (m: FleetBoardMessage) => void): void {
    this.listener = listener;
  }
  onReady(): void {}
  start(): void {}
  async stop(): Promise<void> {}
  deliver(m: FleetBoardMessage): void {
    this.listener(m);
  }
}

function member(id: string): ReplicaRecord {
  return { id, advertise_url: `http://${id}`, started_at: 1, last_seen: 1, version: 'x' };
}

const published = (id: string, replica: string) => publishedWorker(id, { replica });

describe('FleetSync: the link version on the fleet board', () => {
  let clock: FakeClock;
  let fleet: Fleet;
  let board: HandBoard;
  let queue: AdmissionQueue;
  let sync: FleetSync;
  const abandoned: string[] = [];

  beforeEach(() => {
    clock = new FakeClock();
    const config = loadConfig({ PROVIDER_NAME: 'local', INSTANCE_ID: 'gw-a' });
    fleet = new Fleet(config, clock, new NoWorkerRecords(), new MetricsService(), new LifecycleState());
    abandoned.length = 0;
    const remote = new RemoteWorkers(
      fleet,
      (_replica, id) => {
        return Object.assign(new RecordingChannel(), { abandon: () => void abandoned.push(id) });
      },
      () => clock.now(),
    );
    board = new HandBoard();
    queue = new AdmissionQueue(config, clock, new MetricsService());
    const members = [member('gw-a'), member('gw-b'), member('gw-c')];
    const membership = {
      degraded: () => false,
      members: () => members,
      onChange: (_l: (c: MembershipChange) => void) => () => undefined,
    } as unknown as Membership;
    sync = new FleetSync(fleet, remote, board, queue, membership, clock, { replicaId: 'gw-a', flushMs: 20, fullEveryMs: 60_000 });
    sync.start();
  });

  afterEach(async () => {
    await sync.stop();
  });

  const queued = { providers: { local: 3 }, tenants: {} };

  it('publishes the link it speaks, and routes only to the workers of replicas that speak it', () => {
    board.deliver({ from: 'gw-b', kind: 'hello' });
    expect(board.sent.at(-1)).toMatchObject({ from: 'gw-a', kind: 'full', link: LINK_VERSION });

    // Explicitly the same version, and absent (the release that introduced the link did not publish it).
    board.deliver({ from: 'gw-b', kind: 'full', workers: [published('w-b', 'gw-b')], link: LINK_VERSION });
    board.deliver({ from: 'gw-c', kind: 'full', workers: [published('w-c', 'gw-c')] });
    expect([...fleet.directory.servingExactly('m1')].map((w) => w.id).sort()).toEqual(['w-b', 'w-c']);

    // gw-c restarted on a release with another link: what was forwarded to it is given up, its workers go.
    board.deliver({ from: 'gw-c', kind: 'full', workers: [published('w-c', 'gw-c')], queue: queued, link: LINK_VERSION + 1 });
    expect(abandoned).toEqual(['w-c']);
    expect([...fleet.directory.servingExactly('m1')].map((w) => w.id)).toEqual(['w-b']);
    expect(fleet.directory.get('w-c')).toBeUndefined();
    // Its queue still counts against the cluster's bounds.
    expect(queue.elsewhere.provider('local')).toBe(3);

    // Its deltas do not bring a worker back either.
    board.deliver({ from: 'gw-c', kind: 'delta', workers: [published('w-c2', 'gw-c')], removed: [], link: 'v9' });
    expect(fleet.directory.get('w-c2')).toBeUndefined();

    // Once it runs this link again, its workers are used again; a delta first asks for everyone's full list.
    const before = board.sent.length;
    board.deliver({ from: 'gw-c', kind: 'delta', workers: [published('w-c2', 'gw-c')], removed: [], link: LINK_VERSION });
    expect(board.sent.slice(before)).toEqual([{ from: 'gw-a', kind: 'hello' }]);
    board.deliver({ from: 'gw-c', kind: 'full', workers: [published('w-c', 'gw-c'), published('w-c2', 'gw-c')], link: LINK_VERSION });
    expect([...fleet.directory.servingExactly('m1')].map((w) => w.id).sort()).toEqual(['w-b', 'w-c', 'w-c2']);
  });

  it('changes of its own workers go out with its link version', () => {
    queue.onDepthChange?.();
    clock.advance(20);
    expect(board.sent.at(-1)).toMatchObject({ from: 'gw-a', kind: 'delta', link: LINK_VERSION });
  });
});

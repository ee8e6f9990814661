import { RecordingChannel, workerSession } from '../../test/support/dispatch-harness';
import { Features } from '../protocol';
import { LeaseHost, SlotLease } from './slot-lease';
import { WorkerSession } from './worker-session';

/** A LeaseHost that only writes down what the lease told it. */
class RecordingHost implements LeaseHost {
  calls: string[] = [];
  released(w: WorkerSession) {
    this.calls.push(`released:${w.id}`);
  }
  slotFreed(w: WorkerSession) {
    this.calls.push(`slotFreed:${w.id}`);
  }
  hold(w: WorkerSession, requestId: string, sentSeq: number) {
    this.calls.push(`hold:${w.id}:${requestId}:${sentSeq}`);
  }
}

describe('SlotLease', () => {
  let channel: RecordingChannel;
  let worker: WorkerSession;
  let host: RecordingHost;

  beforeEach(() => {
    channel = new RecordingChannel();
    worker = workerSession('w', 'p', 'w', ['m'], 2, '10.0.0.1', 0, channel);
    host = new RecordingHost();
  });

  function lease(requestId: string, sentSeq: number): SlotLease {
    const l = new SlotLease(worker, host, requestId, 'm', sentSeq);
    worker.assigned.set(requestId, l);
    return l;
  }

  it('release gives the slot back once, tells the host, and remembers the id as finished', () => {
    const l = lease('r1', 1);
    l.release();
    l.release();
    expect(l.held).toBe(false);
    expect(worker.assigned.has('r1')).toBe(false);
    expect(worker.isLate('r1')).toBe(true);
    expect(host.calls).toEqual(['released:w']);
    l.announceFree();
    expect(host.calls).toEqual(['released:w', 'slotFreed:w']);
  });

  it('cancel sends one cancel frame and asks the host to hold the slot with its send order', () => {
    const l = lease('r1', 7);
    expect(l.cancel('client_disconnect')).toBe('client_disconnect');
    expect(l.cancel('timeout')).toBeUndefined();
    l.release();
    expect(channel.sent).toEqual([{ type: 'cancel', request_id: 'r1', reason: 'client_disconnect' }]);
    expect(host.calls).toEqual(['released:w', 'hold:w:r1:7']);
  });

  it('extended cancel reasons go on the wire only with the cancel_reasons feature', () => {
    expect(lease('r1', 1).cancel('stream_too_large')).toBe('client_disconnect');
    worker.features = new Set([Features.CANCEL_REASONS]);
    expect(lease('r2', 2).cancel('client_too_slow')).toBe('client_too_slow');
    expect(channel.sent.map((m) => (m as { reason: string }).reason)).toEqual(['client_disconnect', 'client_too_slow']);
  });

  it('a lapsed lease (its worker gone) ends without a frame: release and cancel do nothing', () => {
    const l = lease('r1', 1);
    l.lapse();
    l.release();
    expect(l.cancel('timeout')).toBeUndefined();
    expect(channel.sent).toEqual([]);
    expect(host.calls).toEqual([]);
  });

  it("a lease no longer in its worker's assignments (replaced under the same id) does nothing", () => {
    const stale = lease('r1', 1);
    lease('r1', 2);
    stale.release();
    expect(stale.cancel('timeout')).toBeUndefined();
    expect(host.calls).toEqual([]);
    expect(worker.assigned.get('r1')).not.toBe(stale);
  });

  it('send and worker go to the worker the lease was granted on', () => {
    const l = lease('r1', 1);
    l.send({ type: 'models_refresh', reason: 'x' });
    expect(channel.sent).toEqual([{ type: 'models_refresh', reason: 'x' }]);
    expect(l.worker).toBe(worker);
  });
});

import { Fleet } from '../../src/fleet/fleet.service';
import { publishedWorker } from '../support/published-worker';
import { RemoteWorkers } from '../../src/fleet/remote-workers';
import { RecordingChannel } from '../support/dispatch-harness';
import { startGateway, TestGateway } from '../support/gateway';
import { ScriptedWorker } from '../support/scripted-worker';
import { call } from './support';

/** A worker as another replica ('gw-b') publishes it on the fleet board. */
const publishedElsewhere = (id: string) => publishedWorker(id, { provider: 'default' });

/**
 * `models_refresh` travels on the worker's own link. A worker connected to another replica is in
 * this replica's fleet (cluster mode) but its link is not here: the refresh is refused with the
 * lifecycle operations' 409, not acknowledged with a 202 that nothing follows.
 */
describe('POST /admin/workers/:id/refresh-models for a worker of another replica', () => {
  let gw: TestGateway;
  beforeEach(async () => {
    gw = await startGateway();
  });
  afterEach(() => gw.close());

  it('answers 409 conflict naming its replica, and sends it nothing; a local worker still gets models_refresh', async () => {
    const channel = new RecordingChannel();
    const fleet = gw.app.get(Fleet);
    new RemoteWorkers(fleet, () => channel, Date.now).apply('gw-b', [publishedElsewhere('w-remote')], [], false);
    expect(fleet.sessions.get('w-remote')?.remote).toBe(true);

    const res = await call(gw, 'POST', '/admin/workers/w-remote/refresh-models', {});
    expect(res.status).toBe(409);
    expect(res.json.error).toMatchObject({
      code: 'conflict',
      message: "Worker 'w-remote' is connected to gateway replica 'gw-b': send the request there",
      retriable: false,
    });
    expect(channel.sent).toEqual([]);

    const { worker, ack } = await ScriptedWorker.register(gw.workerUrl, { models: ['local-m'] });
    expect((await call(gw, 'POST', `/admin/workers/${ack.worker_id}/refresh-models`, {})).status).toBe(202);
    expect(await worker.next('models_refresh')).toMatchObject({ reason: 'admin' });
    worker.close();
  });
});

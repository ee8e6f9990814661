import { DataSource } from 'typeorm';
import { startGateway, TestGateway } from '../support/gateway';
import { ScriptedWorker } from '../support/scripted-worker';
import { chat, eventually, post, sleep } from '../support/http';

/** The relay writes worker records as workers come, beat and go — checked in the SQLite file. */
describe('worker records written by the relay', () => {
  let gw: TestGateway;
  let db: DataSource;
  const row = async (id: string) =>
    (await db.query('SELECT state, connected_at, last_heartbeat_at, disconnected_at, models FROM worker_records WHERE id = ?', [id]))[0];

  beforeAll(async () => {
    gw = await startGateway({ HEARTBEAT_FLUSH_INTERVAL_SECS: '0.05', QUEUE_TIMEOUT_SECS: '0.3' });
    db = gw.app.get(DataSource);
  });
  afterAll(() => gw.close());

  it('records the connection, refreshes it from pongs and marks it offline on disconnect', async () => {
    const { worker, ack } = await ScriptedWorker.register(gw.workerUrl, { models: ['rec-model'] });
    const connected = await eventually(() => row(ack.worker_id));
    expect(connected.state).toBe('online');
    expect(JSON.parse(connected.models)).toEqual(['rec-model']);
    await sleep(20);
    worker.send({ type: 'pong', current_load: 0 });
    await eventually(async () => Number((await row(ack.worker_id)).last_heartbeat_at) > Number(connected.connected_at));
    worker.close();
    await eventually(async () => (await row(ack.worker_id)).state === 'offline');
  });

  it('queues instead of answering 404 for a model a recently disconnected worker served', async () => {
    const { worker } = await ScriptedWorker.register(gw.workerUrl, { models: ['recent-model'] });
    worker.close();
    await worker.closed;
    await sleep(50);
    const res = await post(gw.url, '/v1/chat/completions', chat('recent-model'));
    expect(res.status).toBe(504);
    expect(res.json.error.code).toBe('queue_timeout');
  });
});

import { startGateway, TestGateway, TEST_ADMIN_TOKEN } from '../support/gateway';
import { ScriptedWorker } from '../support/scripted-worker';
import { admin } from '../support/http';

describe('REJECT_LEGACY_WORKERS=true (a real gateway)', () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startGateway({ REJECT_LEGACY_WORKERS: 'true' });
  });
  afterAll(() => gw.close());

  it('closes 1002 on a register without protocol_version: no ack, no worker', async () => {
    const legacy = await ScriptedWorker.connect(gw.workerUrl);
    legacy.send({ type: 'register', worker_name: 'legacy', models: ['a'], max_concurrent: 1 });
    expect(await legacy.closed).toEqual({ code: 1002, reason: 'worker registration protocol error' });
    expect(legacy.count('register_ack')).toBe(0);
    const workers = await admin(gw.url, 'GET', '/admin/workers', TEST_ADMIN_TOKEN);
    expect(workers.json.data.map((w: { name: string }) => w.name)).not.toContain('legacy');
  });

  it('still accepts a worker that sends the protocol version', async () => {
    const { worker, ack } = await ScriptedWorker.register(gw.workerUrl, { models: ['a'], worker_name: 'current' });
    expect(ack).toMatchObject({ type: 'register_ack', protocol_version: '2026-04-bridge-v1' });
    const workers = await admin(gw.url, 'GET', '/admin/workers', TEST_ADMIN_TOKEN);
    expect(workers.json.data.map((w: { name: string }) => w.name)).toContain('current');
    worker.close();
  });
});

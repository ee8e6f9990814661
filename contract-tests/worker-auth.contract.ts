/**
 * Contract: "Worker auth and registration" — workers authenticate per provider with
 * X-Worker-Secret (preferred) or the legacy worker_secret query; unknown and disabled providers
 * and wrong secrets are refused with close 1008 "worker authentication failed".
 */
import { useScope } from './support/scope';
import { target } from './support/target';
import { describeClose, ScriptedWorker } from './support/worker';
import { uniqueModel } from './support/util';

const AUTH_FAILED = { code: 1008, reason: 'worker authentication failed' };

async function expectRejected(w: ScriptedWorker): Promise<void> {
  const info = await w.closed;
  expect({ code: info.code, reason: info.reason, upgradeFailure: info.upgradeFailure }).toEqual({ ...AUTH_FAILED, upgradeFailure: undefined });
  expect(w.all('register_ack')).toHaveLength(0);
}

describe('worker auth', () => {
  const scope = useScope();

  test('a worker authenticating with the X-Worker-Secret header is accepted and acked', async () => {
    const w = await scope.connect({ secret: target().workerSecret });
    const ack = await w.register({ models: [uniqueModel('auth')] });
    expect(ack.type).toBe('register_ack');
    expect(typeof ack.worker_id).toBe('string');
    expect(ack.worker_id.length).toBeGreaterThan(0);
    expect(w.isOpen).toBe(true);
  });

  test('a legacy worker sending the secret only as the worker_secret query parameter is accepted', async () => {
    const w = await scope.connect({ secret: null, querySecret: target().workerSecret });
    const ack = await w.register({ models: [uniqueModel('auth')] });
    expect(typeof ack.worker_id).toBe('string');
  });

  test('the header wins over the query: a wrong header is refused even with the right query secret', async () => {
    const w = await scope.connect({ secret: 'definitely-wrong-secret', querySecret: target().workerSecret });
    w.send(w.registerFrame({ models: [uniqueModel('auth')] }));
    await expectRejected(w);
  });

  test('the header wins over the query: the right header is accepted even with a wrong query secret', async () => {
    const w = await scope.connect({ secret: target().workerSecret, querySecret: 'definitely-wrong-secret' });
    const ack = await w.register({ models: [uniqueModel('auth')] });
    expect(typeof ack.worker_id).toBe('string');
  });

  test('the provider query parameter defaults to "local"', async () => {
    // The suite's own gateway names its default provider "local"; the reference worker omits ?provider.
    const w = await scope.connect({ provider: null, secret: target().workerSecret });
    const ack = await w.register({ models: [uniqueModel('auth')] });
    expect(typeof ack.worker_id).toBe('string');
    const info = await scope.admin.worker(ack.worker_id);
    expect(info?.provider).toBe('local');
  });

  test("a worker of a second provider authenticates with that provider's own secret", async () => {
    const { name, secret } = target().second;
    const w = await scope.connect({ provider: name, secret });
    const ack = await w.register({ models: [uniqueModel('auth')] });
    expect(typeof ack.worker_id).toBe('string');
    expect((await scope.admin.worker(ack.worker_id))?.provider).toBe(name);
  });

  test('another provider\'s secret is refused: close 1008 "worker authentication failed"', async () => {
    const w = await scope.connect({ provider: target().second.name, secret: target().workerSecret });
    w.send(w.registerFrame({ models: [uniqueModel('auth')] }));
    await expectRejected(w);
  });

  test('an unknown provider is refused: close 1008 "worker authentication failed"', async () => {
    const w = await scope.connect({ provider: `no-such-provider-${uniqueModel()}`, secret: target().workerSecret });
    w.send(w.registerFrame({ models: [uniqueModel('auth')] }));
    await expectRejected(w);
  });

  test('a disabled provider is refused even with its correct secret: close 1008 "worker authentication failed"', async () => {
    const { name, secret } = target().disabled;
    const w = await scope.connect({ provider: name, secret });
    w.send(w.registerFrame({ models: [uniqueModel('auth')] }));
    await expectRejected(w);
  });

  test('a wrong secret is refused: close 1008 "worker authentication failed"', async () => {
    const w = await scope.connect({ secret: 'wrong-secret-value' });
    w.send(w.registerFrame({ models: [uniqueModel('auth')] }));
    await expectRejected(w);
  });

  test('a missing secret is refused: close 1008 "worker authentication failed"', async () => {
    const w = await scope.connect({ secret: null });
    w.send(w.registerFrame({ models: [uniqueModel('auth')] }));
    await expectRejected(w);
  });

  test('a refused worker never becomes routable', async () => {
    const model = uniqueModel('refused');
    const w = await scope.connect({ secret: 'wrong-secret-value' });
    w.send(w.registerFrame({ models: [model] }));
    const info = await w.closed;
    expect(describeClose(info)).toBe('close 1008 "worker authentication failed"');
    const res = await scope.post('/v1/chat/completions', JSON.stringify({ model, messages: [] })).done;
    expect(res.status).toBe(404);
    expect(w.all('request')).toHaveLength(0);
  });
});

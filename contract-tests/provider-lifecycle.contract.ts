/**
 * Contract: "Provider deletion drains queued requests with an explicit provider-deleted error and
 * closes connected workers"; disabled providers answer "Provider is currently disabled".
 */
import { expectAnthropicError, expectOpenAiError } from './support/expect-error';
import { useScope } from './support/scope';
import { target } from './support/target';
import { chatBody, messagesBody, uniqueModel } from './support/util';

describe('provider lifecycle', () => {
  const scope = useScope();

  test('deleting a provider fails its queued and in-flight requests with 503 provider_deleted and closes its workers', async () => {
    const model = uniqueModel('del');
    const p = await scope.provider({ models: [model], queue_timeout_secs: 20, request_timeout_secs: 20 }, 'del');
    const busy = await scope.worker({ models: [model], max_concurrent: 1 }, { provider: p.name, secret: p.secret }, 'busy');
    const inflight = scope.post('/v1/chat/completions', chatBody(model, { seq: 'inflight' }));
    await busy.nextRequest();
    const queued = scope.post('/v1/chat/completions', chatBody(model, { seq: 'queued' }));
    await scope.admin.waitQueueDepth(p.name, 1);
    const other = await scope.worker({ models: [uniqueModel('other')] }, { provider: p.name, secret: p.secret }, 'idle');

    const res = await scope.admin.deleteProvider(p.name);
    expect(res.status).toBe(200);

    const e1 = expectOpenAiError(await inflight.done, 503, 'provider_deleted');
    const e2 = expectOpenAiError(await queued.done, 503, 'provider_deleted');
    expect(e1.message).toBe(e2.message);
    for (const w of [busy, other]) {
      const closed = await w.closed;
      expect({ worker: w.label, code: closed.code, reason: closed.reason }).toEqual({ worker: w.label, code: 1000, reason: 'graceful shutdown complete' });
    }
    expect(await scope.admin.provider(p.name)).toBeUndefined();
  });

  test("after deletion the provider's secret no longer authenticates workers", async () => {
    const p = await scope.provider({}, 'delauth');
    expect((await scope.admin.deleteProvider(p.name)).status).toBe(200);
    const w = await scope.connect({ provider: p.name, secret: p.secret });
    w.send(w.registerFrame({ models: [uniqueModel('x')] }));
    const closed = await w.closed;
    expect({ code: closed.code, reason: closed.reason }).toEqual({ code: 1008, reason: 'worker authentication failed' });
  });

  test('provider_deleted on /v1/messages uses the Anthropic dialect', async () => {
    const model = uniqueModel('delant');
    const p = await scope.provider({ models: [model], queue_timeout_secs: 20 }, 'delant');
    const queued = scope.post('/v1/messages', messagesBody(model));
    await scope.admin.waitQueueDepth(p.name, 1);
    await scope.admin.deleteProvider(p.name);
    expectAnthropicError(await queued.done, 503, 'provider_deleted');
  });

  test('a model only a disabled provider knows answers 503 provider_disabled ("Provider is currently disabled")', async () => {
    const res = await scope.post('/v1/chat/completions', chatBody(target().disabled.model)).done;
    const err = expectOpenAiError(res, 503, 'provider_disabled');
    expect(err.message).toBe('Provider is currently disabled');
  });

  test('disabling a provider through the admin API makes its models answer 503 provider_disabled', async () => {
    const model = uniqueModel('dis');
    const p = await scope.provider({ models: [model], queue_timeout_secs: 20 }, 'dis');
    await scope.admin.patchProvider(p.name, { enabled: false });
    const res = await scope.post('/v1/chat/completions', chatBody(model)).done;
    expectOpenAiError(res, 503, 'provider_disabled');
    const ant = await scope.post('/v1/messages', messagesBody(model)).done;
    expectAnthropicError(ant, 503, 'provider_disabled');
  });

  test('a provider disabled while a worker is connected stops routing to that worker', async () => {
    const model = uniqueModel('disw');
    const p = await scope.provider({ models: [model], queue_timeout_secs: 20 }, 'disw');
    const w = await scope.worker({ models: [model] }, { provider: p.name, secret: p.secret });
    await scope.admin.patchProvider(p.name, { enabled: false });
    const res = await scope.post('/v1/chat/completions', chatBody(model)).done;
    expectOpenAiError(res, 503, 'provider_disabled');
    expect(w.requests()).toHaveLength(0);
  });

  test('re-enabling a provider restores routing', async () => {
    const model = uniqueModel('reen');
    const p = await scope.provider({ models: [model], enabled: false }, 'reen');
    await scope.admin.patchProvider(p.name, { enabled: true });
    const w = await scope.worker({ models: [model] }, { provider: p.name, secret: p.secret });
    const x = scope.post('/v1/chat/completions', chatBody(model));
    const req = await w.nextRequest();
    w.respondJson(req.request_id, { ok: true });
    expect((await x.done).status).toBe(200);
  });
});

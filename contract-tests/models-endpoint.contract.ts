/**
 * Contract: "/v1/models compatibility endpoint" — lists the models of connected, non-draining
 * workers, de-duplicated, never `*`; usable by the OpenAI SDK.
 */
import OpenAI from 'openai';
import { useScope } from './support/scope';
import { target } from './support/target';
import { chatBody, uniqueModel, waitUntil } from './support/util';

describe('/v1/models', () => {
  const scope = useScope();

  async function modelIds(): Promise<string[]> {
    const res = await scope.request('/v1/models').done;
    expect(res.status).toBe(200);
    const body = res.json();
    expect(body.object).toBe('list');
    return body.data.map((m: { id: string; object: string }) => {
      expect(m.object).toBe('model');
      return m.id;
    });
  }

  test('lists the live models of connected workers once each (de-duplicated across workers)', async () => {
    const [x1, x2, x3] = [uniqueModel('lm'), uniqueModel('lm'), uniqueModel('lm')];
    await scope.worker({ models: [x1, x2] }, {}, 'A');
    await scope.worker({ models: [x2, x3] }, { provider: target().second.name, secret: target().second.secret }, 'B');
    const ids = await modelIds();
    for (const m of [x1, x2, x3]) expect(ids.filter((id) => id === m)).toHaveLength(1);
    expect(ids).not.toContain('*');
    expect(new Set(ids).size).toBe(ids.length);
  });

  test('models of a disconnected worker disappear', async () => {
    const m = uniqueModel('gone');
    const w = await scope.worker({ models: [m] });
    expect(await modelIds()).toContain(m);
    w.close();
    await w.closed;
    await waitUntil(async () => !(await modelIds()).includes(m), `${m} to leave /v1/models`);
  });

  test('models served only by a draining worker are not listed (another worker keeps shared ones listed)', async () => {
    const [shared, onlyDraining] = [uniqueModel('shared'), uniqueModel('draining')];
    await scope.worker({ models: [shared] }, {}, 'stays');
    const draining = await scope.worker({ models: [shared, onlyDraining], max_concurrent: 1 }, {}, 'drains');
    // Keep the draining worker busy so it stays connected while draining.
    const held = scope.post('/v1/chat/completions', chatBody(onlyDraining));
    const req = await draining.nextRequest();
    expect(await modelIds()).toEqual(expect.arrayContaining([shared, onlyDraining]));
    const res = await scope.admin.drain(draining.workerId, { timeout_secs: 20, reason: 'contract-test' });
    expect(res.status).toBe(202);
    await draining.next('graceful_shutdown');
    const ids = await modelIds();
    expect(ids).toContain(shared);
    expect(ids).not.toContain(onlyDraining);
    expect(draining.isOpen).toBe(true);
    draining.respondJson(req.request_id, { ok: true });
    expect((await held.done).status).toBe(200);
  });

  test('the OpenAI SDK can list models', async () => {
    const m = uniqueModel('sdk');
    await scope.worker({ models: [m] });
    const client = new OpenAI({ baseURL: `${target().url}/v1`, apiKey: 'sk-contract', maxRetries: 0 });
    const ids: string[] = [];
    for await (const model of client.models.list()) ids.push(model.id);
    expect(ids).toContain(m);
  });
});

/**
 * Contract: a worker advertising `*` accepts any model, and `*` never appears in /v1/models.
 * A wildcard worker makes every model "known" to its provider, which would turn other files'
 * "unknown model → 404" checks into queueing, so this file runs against its own gateway.
 */
import { spawnGateway, SpawnedGateway } from './support/server';
import { Scope } from './support/scope';
import { chatBody, uniqueModel } from './support/util';

describe('wildcard workers (dedicated gateway)', () => {
  let gw: SpawnedGateway;
  let scope: Scope;

  beforeAll(async () => {
    gw = await spawnGateway({ label: 'wildcard' });
    scope = new Scope({ baseUrl: gw.url, wsUrl: gw.wsUrl, adminToken: gw.env.ADMIN_TOKEN });
  });
  afterEach(async () => scope.cleanup());
  afterAll(async () => {
    await gw?.stop('SIGTERM');
  });

  test('a "*" worker receives requests for any model', async () => {
    const w = await scope.worker({ models: ['*'] }, { secret: gw.env.WORKER_SECRET, provider: 'local' });
    for (const model of [uniqueModel('any'), uniqueModel('other')]) {
      const x = scope.post('/v1/chat/completions', chatBody(model));
      const req = await w.nextRequest();
      expect(req.model).toBe(model);
      w.respondJson(req.request_id, { model });
      const res = await x.done;
      expect(res.status).toBe(200);
      expect(res.json()).toEqual({ model });
    }
  });

  test('"*" is never listed by /v1/models, exact models of the same worker are', async () => {
    const exact = uniqueModel('listed');
    await scope.worker({ models: ['*', exact] }, { secret: gw.env.WORKER_SECRET, provider: 'local' });
    const res = await scope.request('/v1/models').done;
    expect(res.status).toBe(200);
    const ids: string[] = res.json().data.map((m: { id: string }) => m.id);
    expect(ids).toContain(exact);
    expect(ids).not.toContain('*');
  });
});

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ProviderStore } from '../../src/providers/provider-store';
import { startGateway, TestGateway } from '../support/gateway';
import { ScriptedWorker } from '../support/scripted-worker';
import { chat, post } from '../support/http';
import { OK_BODY } from '../support/routing';
import { createPool, withoutToken } from '../control-plane/support';
import { call, ConfigFile, providers, reload } from './support';

const declarations = async (gw: TestGateway, pool: string) => {
  const p = (await providers(gw))[pool];
  return { models: p.models, aliases: p.aliases, capabilities: p.capabilities };
};

async function listedModels(gw: TestGateway): Promise<string[]> {
  const body: any = await (await fetch(`${gw.url}/v1/models`)).json();
  return body.data.map((m: { id: string }) => m.id);
}

describe('POST /v1/pools/:id/reload: models, aliases and capabilities of a pool, all or nothing', () => {
  let gw: TestGateway;
  let file: ConfigFile;
  beforeEach(async () => {
    file = new ConfigFile('providers:\n  - name: local\n    secret: test-worker-secret\nrouting:\n  aliases: {global-alias: m-local}\n');
    gw = await startGateway({ CONFIG_FILE: file.path, QUEUE_TIMEOUT_SECS: '10' });
  });
  afterEach(async () => {
    jest.restoreAllMocks();
    await gw.close();
  });

  it('needs the admin token (401 without it or with a wrong one)', async () => {
    expect(await withoutToken(gw, 'POST', '/v1/pools/local/reload')).toEqual([401, 401]);
  });

  it('an unknown pool is 404 not_found, before its body is judged', async () => {
    const res = await call(gw, 'POST', '/v1/pools/nope/reload', { models: 'not a list' });
    expect(res.status).toBe(404);
    expect(res.json.error).toMatchObject({ code: 'not_found', message: "Pool 'nope' not found" });
  });

  it('replaces the declarations at once and answers the new state; a field left out keeps its value', async () => {
    await createPool(gw, 'gpu');
    const res = await call(gw, 'POST', '/v1/pools/gpu/reload', {
      models: ['llama-70b', 'llama-8b'],
      aliases: { fast: 'llama-8b' },
      capabilities: { 'llama-70b': { vision: false, context_length: 32768 } },
    });
    expect(res.status).toBe(200);
    const state = {
      id: 'gpu',
      models: ['llama-70b', 'llama-8b'],
      aliases: { fast: 'llama-8b' },
      capabilities: { 'llama-70b': { vision: false, context_length: 32768 } },
    };
    expect(res.json).toEqual(state);
    expect(await declarations(gw, 'gpu')).toEqual({ models: state.models, aliases: state.aliases, capabilities: state.capabilities });

    const onlyCaps = await call(gw, 'POST', '/v1/pools/gpu/reload', { capabilities: {} });
    expect(onlyCaps.json).toEqual({ ...state, capabilities: {} });
    const empty = await call(gw, 'POST', '/v1/pools/gpu/reload', {});
    expect(empty.json).toEqual({ ...state, capabilities: {} });
    const cleared = await call(gw, 'POST', '/v1/pools/gpu/reload', { models: [], aliases: {} });
    expect(cleared.json).toEqual({ id: 'gpu', models: [], aliases: {}, capabilities: {} });
  });

  it("a pool alias routes to that pool's workers only, with the body's model rewritten as for global aliases", async () => {
    const gpu = await createPool(gw, 'gpu');
    const { worker: local } = await ScriptedWorker.register(gw.workerUrl, { models: ['llama-8b'] });
    const { worker: pooled } = await ScriptedWorker.register(gw.workerUrl, { models: ['llama-8b'] }, gpu);
    // The target is served by the pool's worker without being declared.
    expect((await call(gw, 'POST', '/v1/pools/gpu/reload', { aliases: { fast: 'llama-8b' } })).status).toBe(200);

    for (let i = 0; i < 3; i++) {
      const raw = '{"model" : "fast","messages":[{"role":"user","content":"fast"}],"n":1}';
      const pending = post(gw.url, '/v1/chat/completions', raw);
      const req = await pooled.next('request');
      expect(req.model).toBe('llama-8b');
      expect(req.body).toBe('{"model" : "llama-8b","messages":[{"role":"user","content":"fast"}],"n":1}');
      pooled.complete(req.request_id, OK_BODY);
      const res = await pending;
      expect(res.status).toBe(200);
      expect(res.headers.get('x-switchboard-model')).toBe('llama-8b');
    }
    expect(local.count('request')).toBe(0);
    expect(await listedModels(gw)).toEqual(expect.arrayContaining(['llama-8b', 'fast']));

    // Pinned to another pool, the alias is not one: that pool has no model "fast".
    const pinned = await post(gw.url, '/v1/chat/completions', chat('fast'), { 'x-switchboard-provider': 'local' });
    expect(pinned.status).toBe(503);
    expect(pinned.json.error).toMatchObject({ code: 'pool_unready', pool_id: 'local' });
    expect(local.count('request')).toBe(0);
    local.close();
    pooled.close();
  });

  it('one invalid field changes nothing: 400 listing every problem', async () => {
    await createPool(gw, 'gpu');
    await createPool(gw, 'other');
    const good = { models: ['a', 'b'], aliases: { fast: 'a' }, capabilities: { a: { tools: true } } };
    expect((await call(gw, 'POST', '/v1/pools/gpu/reload', good)).status).toBe(200);
    expect((await call(gw, 'POST', '/v1/pools/other/reload', { models: ['o'], aliases: { taken: 'o' } })).status).toBe(200);

    const one = await call(gw, 'POST', '/v1/pools/gpu/reload', { models: ['new-model'], capabilities: { a: { vision: 'yes' } } });
    expect(one.status).toBe(400);
    expect(one.json.error).toMatchObject({ code: 'invalid_request', message: "Reload of pool 'gpu' rejected (2 problems); nothing was changed" });
    expect(one.json.error.problems).toEqual([
      'capabilities.a.vision must be true or false',
      // The current alias "fast" → "a" would lose its target.
      'aliases.fast: target "a" is not a model of pool "gpu" (declare it in models, or connect a worker that serves it)',
    ]);

    const many = await call(gw, 'POST', '/v1/pools/gpu/reload', {
      models: ['x', 7],
      aliases: { self: 'self', chain: 'fast', fast: 'x', ghost: 'nowhere', 'global-alias': 'x', taken: 'x' },
      capabilities: { x: { bogus: true } },
      extra: 1,
    });
    expect(many.status).toBe(400);
    expect(many.json.error.problems).toEqual([
      'extra is not a pool setting (known: models, aliases, capabilities)',
      'models[1] must be a model name (a non-empty string of at most 256 characters)',
      'capabilities.x.bogus is not a capability (known: vision, tools, json_mode, context_length)',
      'aliases.self: "self" points at itself',
      'aliases.chain: "chain" → "fast" points at another alias (pool aliases are single-level)',
      'aliases.ghost: target "nowhere" is not a model of pool "gpu" (declare it in models, or connect a worker that serves it)',
      'aliases.global-alias: "global-alias" is a global alias (routing.aliases), which would win over the pool alias',
      'aliases.taken: "taken" is already an alias of pool "other"',
    ]);

    const notJson = await call(gw, 'POST', '/v1/pools/gpu/reload', 'not json');
    expect(notJson.status).toBe(400);
    expect(notJson.json.error.problems).toEqual(['the request body must be a JSON object of models, aliases, capabilities']);

    expect(await declarations(gw, 'gpu')).toEqual(good);
  });

  it('if storing fails, the previous state is restored in memory: 500, nothing changed', async () => {
    await createPool(gw, 'gpu');
    const { worker } = await ScriptedWorker.register(gw.workerUrl, { models: ['a'] }, { provider: 'gpu', secret: 'gpu-secret-123' });
    const good = { models: ['a'], aliases: { fast: 'a' }, capabilities: {} };
    expect((await call(gw, 'POST', '/v1/pools/gpu/reload', good)).status).toBe(200);

    const store = gw.app.get(ProviderStore);
    jest.spyOn(store, 'save').mockRejectedValueOnce(new Error('disk full'));
    const res = await call(gw, 'POST', '/v1/pools/gpu/reload', { models: ['b'], aliases: { quick: 'b' }, capabilities: { b: { tools: false } } });
    expect(res.status).toBe(500);
    expect(res.json.error).toMatchObject({
      code: 'internal_error',
      message: "Pool 'gpu' could not be stored; its previous models, aliases and capabilities stay",
    });
    expect(await declarations(gw, 'gpu')).toEqual(good);
    // The restored alias routes; the one of the failed reload does not exist.
    const pending = post(gw.url, '/v1/chat/completions', chat('fast'));
    const req = await worker.next('request');
    expect(req.model).toBe('a');
    worker.complete(req.request_id, OK_BODY);
    expect((await pending).status).toBe(200);
    expect((await post(gw.url, '/v1/chat/completions', chat('quick'))).json.error.code).toBe('model_not_found');
    worker.close();
  });

  it('a configuration reload rewrites a configured pool from the file but keeps its pool aliases', async () => {
    const { worker } = await ScriptedWorker.register(gw.workerUrl, { models: ['m-local'] });
    expect((await call(gw, 'POST', '/v1/pools/local/reload', { models: ['declared'], aliases: { mine: 'm-local' } })).status).toBe(200);
    // m-local stays in the file's models: they are the allow-list of local's workers.
    file.write('providers:\n  - name: local\n    secret: test-worker-secret\n    models: [from-file, m-local]\nrouting:\n  aliases: {global-alias: m-local}\n');
    const res = await reload(gw);
    expect(res.json.changes.providers).toEqual({ added: [], updated: ['local'], removed: [] });
    expect(await declarations(gw, 'local')).toEqual({ models: ['from-file', 'm-local'], aliases: { mine: 'm-local' }, capabilities: {} });
    const pending = post(gw.url, '/v1/chat/completions', chat('mine'));
    const req = await worker.next('request');
    expect(req.model).toBe('m-local');
    worker.complete(req.request_id, OK_BODY);
    expect((await pending).status).toBe(200);
    worker.close();
  });
});

describe('pool aliases beside global aliases', () => {
  let gw: TestGateway;
  let file: ConfigFile;
  beforeAll(async () => {
    file = new ConfigFile('providers:\n  - name: local\n    secret: test-worker-secret\n');
    gw = await startGateway({ CONFIG_FILE: file.path });
  });
  afterAll(() => gw.close());

  it('a global alias of the same name, added by a later configuration reload, wins (with a warning)', async () => {
    const gpu = await createPool(gw, 'gpu');
    const { worker: pooled } = await ScriptedWorker.register(gw.workerUrl, { models: ['pool-model'] }, gpu);
    const { worker: local } = await ScriptedWorker.register(gw.workerUrl, { models: ['global-model'] });
    expect((await call(gw, 'POST', '/v1/pools/gpu/reload', { aliases: { shared: 'pool-model' } })).status).toBe(200);

    file.write('providers:\n  - name: local\n    secret: test-worker-secret\nrouting:\n  aliases: {shared: global-model}\n');
    const res = await reload(gw);
    expect(res.status).toBe(200);
    expect(res.json.warnings).toEqual(['routing.aliases.shared: also an alias of pool "gpu"; the global alias wins']);
    const pending = post(gw.url, '/v1/chat/completions', chat('shared'));
    const req = await local.next('request');
    expect(req.model).toBe('global-model');
    local.complete(req.request_id, OK_BODY);
    expect((await pending).status).toBe(200);
    expect(pooled.count('request')).toBe(0);
    pooled.close();
    local.close();
  });
});

describe('pool declarations survive a restart', () => {
  it('an admin pool keeps its reloaded models, aliases and capabilities across a restart', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sb-pool-reload-'));
    const env = { DATABASE_URL: `sqlite:${join(dir, 'sb.db')}` };
    try {
      let gw = await startGateway(env);
      await createPool(gw, 'gpu');
      const state = { models: ['a'], aliases: { fast: 'a' }, capabilities: { a: { json_mode: true } } };
      expect((await call(gw, 'POST', '/v1/pools/gpu/reload', state)).json).toEqual({ id: 'gpu', ...state });
      await gw.close();
      gw = await startGateway(env);
      try {
        expect(await declarations(gw, 'gpu')).toEqual(state);
        const { worker } = await ScriptedWorker.register(gw.workerUrl, { models: ['a'] }, { provider: 'gpu', secret: 'gpu-secret-123' });
        const pending = post(gw.url, '/v1/chat/completions', chat('fast'));
        const req = await worker.next('request');
        expect(req.model).toBe('a');
        worker.complete(req.request_id, OK_BODY);
        expect((await pending).status).toBe(200);
        worker.close();
      } finally {
        await gw.close();
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

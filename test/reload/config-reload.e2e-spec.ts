import { startGateway, TestGateway } from '../support/gateway';
import { ScriptedWorker } from '../support/scripted-worker';
import { chat, eventually, post } from '../support/http';
import { OK_BODY } from '../support/routing';
import { refusedRegistration, withoutToken } from '../control-plane/support';
import { call, ConfigFile, loadConfigProblems, providers, reload, tenants } from './support';

const BEFORE = `
providers:
  - name: local
    secret: test-worker-secret
  - name: east
    secret: east-secret-1
    models: [east-model]
  - name: doomed
    secret: doomed-secret-1
routing:
  aliases:
    old-alias: m1
tenants:
  team-a: {rpm: 1000}
  gone-tenant: {rpm: 5}
`;

const AFTER = `
providers:
  - name: local
    secret: test-worker-secret
  - name: east
    secret: east-secret-2
    models: [east-model, east-model-2]
    max_queue_len: 7
  - name: west
    secret: west-secret-1
routing:
  aliases:
    old-alias: m1
    new-alias: m1
tenants:
  team-a: {rpm: 1}
  new-tenant: {rpm: 7}
`;

/** Every problem below is one loadConfig names; the reload must list them all. */
const BROKEN = `
providers:
  - name: local
    secret: test-worker-secret
    max_queue_len: -1
  - name: "bad name!"
routing:
  aliases: {loop: loop}
  weights: {priority: 200}
tenants:
  team-a: {rpm: -5}
bogus_key: 1
`;

describe('POST /admin/reload: providers, routing and tenants from CONFIG_FILE, all or nothing', () => {
  let gw: TestGateway;
  let file: ConfigFile;
  beforeEach(async () => {
    file = new ConfigFile(BEFORE);
    gw = await startGateway({ CONFIG_FILE: file.path, QUEUE_TIMEOUT_SECS: '20' });
  });
  afterEach(() => gw.close());

  it('needs the admin token (401 without it or with a wrong one)', async () => {
    expect(await withoutToken(gw, 'POST', '/admin/reload')).toEqual([401, 401]);
  });

  it('an unchanged file reloads with no changes', async () => {
    const res = await reload(gw);
    expect(res.status).toBe(200);
    expect(res.json).toEqual({
      reloaded: true,
      config_file: file.path,
      changes: {
        routing: {},
        providers: { added: [], updated: [], removed: [] },
        tenants: { added: [], updated: [], removed: [], overridden: [] },
      },
      restart_required: [],
      warnings: [],
    });
  });

  it('adds, updates and removes providers, adds an alias and changes tenants; the answer lists every change', async () => {
    const admin = await call(gw, 'POST', '/admin/providers', { name: 'adm', secret: 'adm-secret-123', models: ['adm-model'] });
    expect(admin.status).toBe(201);
    file.write(AFTER);
    const res = await reload(gw);
    expect(res.status).toBe(200);
    expect(res.json).toEqual({
      reloaded: true,
      config_file: file.path,
      changes: {
        routing: { aliases: { added: ['new-alias'], updated: [], removed: [] } },
        providers: { added: ['west'], updated: ['east'], removed: ['doomed'] },
        tenants: { added: ['new-tenant'], updated: ['team-a'], removed: ['gone-tenant'], overridden: [] },
      },
      restart_required: [],
      warnings: [],
    });
    const now = await providers(gw);
    expect(Object.keys(now).sort()).toEqual(['adm', 'east', 'local', 'west']);
    expect(now.east).toMatchObject({ source: 'config', models: ['east-model', 'east-model-2'], max_queue_len: 7 });
    expect(now.west).toMatchObject({ source: 'config', has_secret: true, models: [] });
    // Admin-created providers are never touched by a reload.
    expect(now.adm).toMatchObject({ source: 'admin', models: ['adm-model'] });
    // Reloading the same file again changes nothing.
    expect((await reload(gw)).json.changes.providers).toEqual({ added: [], updated: [], removed: [] });
  });

  it('warns about an added provider without a worker secret', async () => {
    file.write(`${BEFORE.replace('providers:\n', 'providers:\n  - name: open\n')}`);
    const res = await reload(gw);
    expect(res.status).toBe(200);
    expect(res.json.changes.providers).toEqual({ added: ['open'], updated: [], removed: [] });
    expect(res.json.warnings).toEqual(['provider "open" has no worker secret: no worker can connect to it']);
    expect((await providers(gw)).open).toMatchObject({ has_secret: false, source: 'config' });
  });

  it('an updated secret takes effect for the next worker; an added provider accepts workers', async () => {
    file.write(AFTER);
    expect((await reload(gw)).status).toBe(200);
    const refused = await refusedRegistration(gw, { worker_name: 'old-secret', models: ['east-model'] }, { provider: 'east', secret: 'east-secret-1' });
    expect(refused.close.code).toBe(1008);
    const { worker: east, ack } = await ScriptedWorker.register(gw.workerUrl, { models: ['east-model'] }, { provider: 'east', secret: 'east-secret-2' });
    expect(ack.type).toBe('register_ack');
    const { worker: west } = await ScriptedWorker.register(gw.workerUrl, { models: ['west-model'] }, { provider: 'west', secret: 'west-secret-1' });
    east.close();
    west.close();
  });

  it('a routing alias added by the reload is used by the next request, with the body rewritten to the target', async () => {
    const { worker } = await ScriptedWorker.register(gw.workerUrl, { models: ['m1'] });
    const before = await post(gw.url, '/v1/chat/completions', chat('new-alias'));
    expect(before.status).toBe(404);
    expect(before.json.error.code).toBe('model_not_found');

    file.write(AFTER);
    expect((await reload(gw)).status).toBe(200);
    const pending = post(gw.url, '/v1/chat/completions', chat('new-alias'));
    const req = await worker.next('request');
    expect(req.model).toBe('m1');
    expect(JSON.parse(req.body).model).toBe('m1');
    worker.complete(req.request_id, OK_BODY);
    const res = await pending;
    expect(res.status).toBe(200);
    expect(res.headers.get('x-switchboard-model')).toBe('m1');
    worker.close();
  });

  it('a tenant limit changed by the reload applies to the next request; a removed tenant falls back to the defaults', async () => {
    const { worker } = await ScriptedWorker.register(gw.workerUrl, { models: ['ten-model'], max_concurrent: 4 });
    worker.ws.on('message', (data) => {
      const frame = JSON.parse(data.toString());
      if (frame.type === 'request') worker.complete(frame.request_id, OK_BODY);
    });
    const tenantA = { 'x-tenant-id': 'team-a' };
    const first = await post(gw.url, '/v1/chat/completions', chat('ten-model'), tenantA);
    expect(first.status).toBe(200);
    expect(first.headers.get('x-ratelimit-limit-requests')).toBe('1000');

    file.write(AFTER);
    expect((await reload(gw)).status).toBe(200);
    const fresh = { 'x-tenant-id': 'new-tenant' };
    expect((await post(gw.url, '/v1/chat/completions', chat('ten-model'), fresh)).headers.get('x-ratelimit-limit-requests')).toBe('7');
    // One request per minute now: the next passes with limit 1, the one after is refused.
    const last = await post(gw.url, '/v1/chat/completions', chat('ten-model'), tenantA);
    expect(last.status).toBe(200);
    expect(last.headers.get('x-ratelimit-limit-requests')).toBe('1');
    const limited = await post(gw.url, '/v1/chat/completions', chat('ten-model'), tenantA);
    expect(limited.status).toBe(429);
    expect(limited.json.error.code).toBe('rate_limit_exceeded');
    expect((await call(gw, 'GET', '/admin/tenants/team-a')).json).toMatchObject({ id: 'team-a', source: 'config', settings: { rpm: 1, tpm: null } });
    expect((await call(gw, 'GET', '/admin/tenants/gone-tenant')).json).toMatchObject({ id: 'gone-tenant', source: 'default' });
    worker.close();
  });

  it('a removed provider works like DELETE /admin/providers/:name: its requests fail provider_deleted and its workers are closed', async () => {
    const doomed = { provider: 'doomed', secret: 'doomed-secret-1' };
    const { worker } = await ScriptedWorker.register(gw.workerUrl, { models: ['doomed-model'], max_concurrent: 1 }, doomed);
    const inFlight = post(gw.url, '/v1/chat/completions', chat('doomed-model'));
    await worker.next('request');
    const queued = post(gw.url, '/v1/chat/completions', chat('doomed-model'));
    await eventually(async () => (await call(gw, 'GET', '/v1/pools/doomed/health')).json.metrics.queue_depth === 1);

    file.write(AFTER);
    expect((await reload(gw)).json.changes.providers.removed).toEqual(['doomed']);
    for (const res of [await inFlight, await queued]) {
      expect(res.status).toBe(503);
      expect(res.json.error.code).toBe('provider_deleted');
    }
    expect((await worker.closed).code).toBe(1000);
    expect((await call(gw, 'GET', '/v1/pools/doomed/health')).status).toBe(404);
  });

  it('settings stored through the admin API keep precedence over reloaded tenants (reported as overridden)', async () => {
    expect((await call(gw, 'PUT', '/admin/tenants/team-a', { rpm: 50 })).status).toBe(200);
    file.write(AFTER);
    const res = await reload(gw);
    expect(res.json.changes.tenants).toEqual({ added: ['new-tenant'], updated: ['team-a'], removed: ['gone-tenant'], overridden: ['team-a'] });
    expect((await call(gw, 'GET', '/admin/tenants/team-a')).json).toMatchObject({ source: 'admin', settings: { rpm: 50 } });
    // Once the stored settings are gone, the reloaded configured ones apply.
    expect((await call(gw, 'DELETE', '/admin/tenants/team-a')).status).toBe(200);
    expect((await call(gw, 'GET', '/admin/tenants/team-a')).json).toMatchObject({ id: 'team-a', source: 'config', settings: { rpm: 1, tpm: null } });
  });

  it('an invalid file is rejected as a whole: 400 listing every problem loadConfig names, and nothing changes', async () => {
    const { worker } = await ScriptedWorker.register(gw.workerUrl, { models: ['m1'] });
    const providersBefore = await providers(gw);
    const tenantsBefore = await tenants(gw);

    file.write(`${AFTER}\nbogus_key: 1\n`.replace('max_queue_len: 7', 'max_queue_len: -7'));
    const one = await reload(gw);
    expect(one.status).toBe(400);
    expect(one.json.error.problems).toEqual(loadConfigProblems(file.path));
    expect(one.json.error.problems).toEqual(['providers[1].max_queue_len must be an integer >= 0, got "-7"', 'bogus_key (config file) is not a setting']);

    file.write(BROKEN);
    const res = await reload(gw);
    expect(res.status).toBe(400);
    expect(res.json.error).toMatchObject({ code: 'invalid_request', kind: 'INVALID_PARAMS', retriable: false });
    expect(res.json.error.message).toMatch(/^Configuration rejected \(\d+ problems\); nothing was changed$/);
    const expected = loadConfigProblems(file.path);
    expect(expected.length).toBeGreaterThanOrEqual(6);
    expect(res.json.error.problems).toEqual(expected);
    expect(res.json.error.problems).toEqual(
      expect.arrayContaining([
        'providers[0].max_queue_len must be an integer >= 0, got "-1"',
        'bogus_key (config file) is not a setting',
        'routing.aliases: "loop" points at itself',
        'tenants.team-a.rpm must be an integer >= 0 <= 9007199254740991, got "-5"',
      ]),
    );

    // Everything as before: providers, tenants, and the aliases (old-alias routes, new-alias does not exist).
    expect(await providers(gw)).toEqual(providersBefore);
    expect(await tenants(gw)).toEqual(tenantsBefore);
    const pending = post(gw.url, '/v1/chat/completions', chat('old-alias'));
    const req = await worker.next('request');
    expect(req.model).toBe('m1');
    worker.complete(req.request_id, OK_BODY);
    expect((await pending).status).toBe(200);
    expect((await post(gw.url, '/v1/chat/completions', chat('new-alias'))).status).toBe(404);
    worker.close();
  });

  it('a file that cannot be read or parsed is a 400 naming it, and nothing changes', async () => {
    const before = await providers(gw);
    file.write('providers: [unterminated\n');
    const bad = await reload(gw);
    expect(bad.status).toBe(400);
    expect(bad.json.error.problems).toHaveLength(1);
    expect(bad.json.error.problems[0]).toMatch(/^CONFIG_FILE ".*" is not valid YAML: /);
    expect(await providers(gw)).toEqual(before);
  });

  it('a file entry named like an admin-created provider is refused (a reload never touches those), and nothing changes', async () => {
    expect((await call(gw, 'POST', '/admin/providers', { name: 'west', secret: 'adm-secret-123' })).status).toBe(201);
    const before = await providers(gw);
    const tenantsBefore = await tenants(gw);
    file.write(AFTER);
    const res = await reload(gw);
    expect(res.status).toBe(400);
    expect(res.json.error.problems).toEqual([
      'providers: "west" is a provider created through the admin API, which a reload never changes; rename the file\'s entry or delete that provider first',
    ]);
    expect(await providers(gw)).toEqual(before);
    expect(await tenants(gw)).toEqual(tenantsBefore);
  });
});

describe('POST /admin/reload: the environment keeps winning; restart-only settings are reported, not applied', () => {
  let gw: TestGateway;
  let file: ConfigFile;
  beforeAll(async () => {
    file = new ConfigFile(`
routing:
  strategy: random
tenants:
  teamb: {rpm: 100, tpm: 1000}
`);
    gw = await startGateway({ CONFIG_FILE: file.path, ROUTING_STRATEGY: 'round_robin', TENANT_RATE_LIMIT_teamb: '3req/min' });
  });
  afterAll(() => gw.close());

  it('keeps environment values over the file, reports restart-only changes and applies none of them', async () => {
    expect((await call(gw, 'GET', '/admin/tenants/teamb')).json.settings).toMatchObject({ rpm: 3, tpm: 1000 });
    file.write(`
listen_addr: 127.0.0.1:1          # LISTEN_ADDR (environment) wins: not a change
database_url: "sqlite::memory:"   # DATABASE_URL (environment) wins: not a change
provider_name: elsewhere          # needs a restart; the provider set is built with the running name
heartbeat_interval_secs: 1
queue: {aging_secs: 5}
max_queue_len: 9                  # a provider default: applied to configured providers
routing:
  strategy: smart                 # ROUTING_STRATEGY (environment) wins: not a change
  max_retries: 1
tenants:
  teamb: {rpm: 100, tpm: 2000}
`);
    const res = await reload(gw);
    expect(res.json.error).toBeUndefined();
    expect(res.status).toBe(200);
    expect(res.json.restart_required.sort()).toEqual(['heartbeat_interval_secs', 'provider_name', 'queue.aging_secs', 'routing.max_retries']);
    expect(res.json.changes).toEqual({
      routing: {},
      providers: { added: [], updated: ['local'], removed: [] },
      tenants: { added: [], updated: ['teamb'], removed: [], overridden: [] },
    });
    expect((await call(gw, 'GET', '/admin/tenants/teamb')).json.settings).toMatchObject({ rpm: 3, tpm: 2000 });
    const list = await providers(gw);
    expect(Object.keys(list)).toEqual(['local']);
    expect(list.local.max_queue_len).toBe(9);
    expect((await call(gw, 'GET', '/v1/capabilities')).status).toBe(200);
  });
});

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DataSource } from 'typeorm';
import { startGateway, TestGateway } from '../support/gateway';
import { admin, chat, post } from '../support/http';
import { ScriptedWorker } from '../support/scripted-worker';
import { adminCall, answerNext, chatCompletion, configFile, createKey } from '../api-keys/support';

const NONE = {
  rpm: null,
  tpm: null,
  tokens_per_day: null,
  priority: null,
  max_priority: null,
  max_queued: null,
  max_concurrent: null,
  models: null,
  session_tokens: null,
  session_time_secs: null,
  pools: null,
};
const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

describe('admin API: /admin/tenants', () => {
  let dir: string;
  let databaseUrl: string;
  let file: string;
  let gw: TestGateway;
  let worker: ScriptedWorker;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'sb-tenants-'));
    databaseUrl = `sqlite:${join(dir, 'switchboard.db')}`;
    file = configFile(['tenants:', '  team-a: {rpm: 100, max_priority: normal}', '  team-b: {models: [m1]}'].join('\n'));
    gw = await startGateway({ DATABASE_URL: databaseUrl, CONFIG_FILE: file, DEFAULT_RATE_LIMIT: '10req/min' });
    ({ worker } = await ScriptedWorker.register(gw.workerUrl, { models: ['m1', 'm2'], max_concurrent: 4 }));
  });
  afterAll(async () => {
    worker.close();
    await gw.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('lists the configured tenants with their source, and the defaults', async () => {
    const res = await adminCall(gw, 'GET', '/admin/tenants');
    expect(res.status).toBe(200);
    expect(res.json).toEqual({
      data: [
        { id: 'team-a', source: 'config', settings: { ...NONE, rpm: 100, max_priority: 'normal' } },
        { id: 'team-b', source: 'config', settings: { ...NONE, models: ['m1'] } },
      ],
      defaults: { ...NONE, rpm: 10 },
    });
  });

  it('shows any tenant: configured, or the defaults for one that is not', async () => {
    expect((await adminCall(gw, 'GET', '/admin/tenants/team-a')).json).toEqual({
      id: 'team-a',
      source: 'config',
      settings: { ...NONE, rpm: 100, max_priority: 'normal' },
    });
    expect((await adminCall(gw, 'GET', '/admin/tenants/nobody')).json).toEqual({ id: 'nobody', source: 'default', settings: { ...NONE, rpm: 10 } });
  });

  it('PUT stores a tenant and applies it at once', async () => {
    const before = post(gw.url, '/v1/chat/completions', chat('m2'), { 'x-tenant-id': 'team-c' });
    await answerNext(worker, chatCompletion);
    expect((await before).status).toBe(200);

    const res = await adminCall(gw, 'PUT', '/admin/tenants/team-c', {
      rpm: 5,
      tpm: 1000,
      tokens_per_day: 5_000_000_000,
      priority: 'low',
      max_priority: 'normal',
      max_queued: 2,
      max_concurrent: 4,
      models: ['m1'],
      session_tokens: 100_000,
      session_time_secs: 600,
    });
    expect(res.status).toBe(200);
    expect(res.json).toEqual({
      id: 'team-c',
      source: 'admin',
      settings: {
        rpm: 5,
        tpm: 1000,
        tokens_per_day: 5_000_000_000,
        priority: 'low',
        max_priority: 'normal',
        max_queued: 2,
        max_concurrent: 4,
        models: ['m1'],
        session_tokens: 100_000,
        session_time_secs: 600,
        pools: null,
      },
      created_at: expect.stringMatching(ISO),
      updated_at: expect.stringMatching(ISO),
    });
    const refused = await post(gw.url, '/v1/chat/completions', chat('m2'), { 'x-tenant-id': 'team-c' });
    expect(refused.status).toBe(403);
    expect(refused.json.error.code).toBe('model_not_allowed');
    const allowed = post(gw.url, '/v1/chat/completions', chat('m1'), { 'x-tenant-id': 'team-c' });
    await answerNext(worker, chatCompletion);
    expect((await allowed).status).toBe(200);
  });

  it("applies to requests authenticated by that tenant's keys too", async () => {
    await adminCall(gw, 'PUT', '/admin/tenants/team-k', { models: ['m2'] });
    const { key } = await createKey(gw, { name: 'k', tenant: 'team-k' });
    expect((await post(gw.url, '/v1/chat/completions', chat('m1'), { 'x-api-key': key })).json.error.code).toBe('model_not_allowed');
    await adminCall(gw, 'PUT', '/admin/tenants/team-k', { models: ['m1'] });
    const pending = post(gw.url, '/v1/chat/completions', chat('m1'), { 'x-api-key': key });
    await answerNext(worker, chatCompletion);
    expect((await pending).status).toBe(200);
  });

  it("PUT overrides the config file's entry as a whole; DELETE brings it back", async () => {
    const put = await adminCall(gw, 'PUT', '/admin/tenants/team-b', { rpm: 7 });
    expect(put.json).toMatchObject({ id: 'team-b', source: 'admin', settings: { ...NONE, rpm: 7 } });
    // models [m1] came from the file and is not merged in: m2 is allowed now.
    const pending = post(gw.url, '/v1/chat/completions', chat('m2'), { 'x-tenant-id': 'team-b' });
    await answerNext(worker, chatCompletion);
    expect((await pending).status).toBe(200);

    const del = await adminCall(gw, 'DELETE', '/admin/tenants/team-b');
    expect(del.status).toBe(200);
    expect(del.json).toEqual({ deleted: 'team-b', now: { id: 'team-b', source: 'config', settings: { ...NONE, models: ['m1'] } } });
    expect((await post(gw.url, '/v1/chat/completions', chat('m2'), { 'x-tenant-id': 'team-b' })).json.error.code).toBe('model_not_allowed');
    expect((await adminCall(gw, 'DELETE', '/admin/tenants/team-b')).status).toBe(404);
    expect((await adminCall(gw, 'DELETE', '/admin/tenants/nobody')).json.error.code).toBe('not_found');
  });

  it('stores tenants in the tenants table', async () => {
    await adminCall(gw, 'PUT', '/admin/tenants/team-db', { rpm: 1, models: ['m1', 'm2'] });
    const [row] = await gw.app.get(DataSource).query("SELECT * FROM tenants WHERE id = 'team-db'");
    expect(row).toMatchObject({ id: 'team-db', rpm: 1, tpm: null, models: '["m1","m2"]' });
  });

  describe('validation (400 invalid_request naming every problem)', () => {
    it('rejects negative limits, bad priorities, bad models and unknown settings at once', async () => {
      const res = await adminCall(gw, 'PUT', '/admin/tenants/team-v', {
        rpm: -1,
        tpm: 1.5,
        tokens_per_day: 'many',
        priority: 'urgent',
        max_priority: 3,
        max_queued: -5,
        models: 'm1',
        colour: 'red',
      });
      expect(res.status).toBe(400);
      expect(res.json.error.code).toBe('invalid_request');
      const problems: string[] = res.json.error.message.split('; ');
      expect(problems).toHaveLength(8);
      expect(problems).toEqual(
        expect.arrayContaining([
          expect.stringMatching(/^body\.colour is not a tenant setting/),
          expect.stringMatching(/^body\.rpm must be an integer >= 0/),
          expect.stringMatching(/^body\.tpm must be an integer >= 0/),
          expect.stringMatching(/^body\.tokens_per_day must be an integer >= 0/),
          expect.stringMatching(/^body\.max_queued must be an integer >= 0/),
          'body.priority must be one of high, normal, low',
          'body.max_priority must be one of high, normal, low',
          'body.models must be a list of model names',
        ]),
      );
      expect((await adminCall(gw, 'GET', '/admin/tenants/team-v')).json.source).toBe('default');
    });

    it('rejects limits beyond what a BIGINT column and a JavaScript number hold exactly', async () => {
      expect((await adminCall(gw, 'PUT', '/admin/tenants/team-v', { rpm: 2 ** 53 })).status).toBe(400);
    });

    it('rejects bad tenant ids and bodies that are not a JSON object', async () => {
      const badId = await adminCall(gw, 'PUT', `/admin/tenants/${'x'.repeat(65)}`, { rpm: 1 });
      expect(badId.status).toBe(400);
      expect(badId.json.error).toMatchObject({ code: 'invalid_request', param: 'id' });
      expect((await adminCall(gw, 'GET', '/admin/tenants/a%20b')).status).toBe(400);
      for (const body of ['[]', '{"rpm":', '']) {
        const res = await fetch(`${gw.url}/admin/tenants/team-v`, { method: 'PUT', headers: { authorization: 'Bearer test-admin-token' }, body });
        expect(res.status).toBe(400);
      }
    });

    it('needs the admin token', async () => {
      expect((await admin(gw.url, 'GET', '/admin/tenants', 'wrong')).status).toBe(401);
      expect((await admin(gw.url, 'PUT', '/admin/tenants/x', 'wrong', { rpm: 1 })).status).toBe(401);
    });
  });

  it('keeps stored tenants across a restart on the same database', async () => {
    await adminCall(gw, 'PUT', '/admin/tenants/team-a', { rpm: 42, priority: 'high' });
    const before = (await adminCall(gw, 'GET', '/admin/tenants')).json;
    await gw.close();
    gw = await startGateway({ DATABASE_URL: databaseUrl, CONFIG_FILE: file, DEFAULT_RATE_LIMIT: '10req/min' });
    ({ worker } = await ScriptedWorker.register(gw.workerUrl, { models: ['m1', 'm2'], max_concurrent: 4 }));
    expect((await adminCall(gw, 'GET', '/admin/tenants')).json).toEqual(before);
    expect((await adminCall(gw, 'GET', '/admin/tenants/team-a')).json).toMatchObject({ source: 'admin', settings: { ...NONE, rpm: 42, priority: 'high' } });
    expect((await post(gw.url, '/v1/chat/completions', chat('m2'), { 'x-tenant-id': 'team-c' })).json.error.code).toBe('model_not_allowed');
  });
});

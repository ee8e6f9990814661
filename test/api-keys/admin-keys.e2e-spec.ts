import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DataSource } from 'typeorm';
import { startGateway, TestGateway } from '../support/gateway';
import { admin, chat, eventually, post } from '../support/http';
import { adminCall, configFile, createKey } from './support';

const sha256 = (s: string) => createHash('sha256').update(s).digest('hex');
const CONFIG_KEY = 'config-file-key-for-the-nightly-batch-0123456789';
const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

async function row(gw: TestGateway, id: string): Promise<Record<string, any>> {
  const rows = await gw.app.get(DataSource).query('SELECT * FROM api_keys WHERE id = ?', [id]);
  return rows[0];
}

describe('admin API: /admin/keys', () => {
  let gw: TestGateway;
  beforeAll(async () => {
    const file = configFile(['keys:', '  - name: nightly', '    tenant: batch', `    key_sha256: ${sha256(CONFIG_KEY)}`, '    rpm: 5'].join('\n'));
    gw = await startGateway({ CONFIG_FILE: file, API_KEY_LAST_USED_FLUSH_SECS: '0.05' });
  });
  afterAll(() => gw.close());

  it('creates a key (201) and shows it once: sb- + 32 random bytes in base64url', async () => {
    const res = await adminCall(gw, 'POST', '/admin/keys', {
      name: 'CI bot',
      tenant: 'team-a',
      rpm: 60,
      tpm: 100000,
      priority: 'low',
      models: ['m1'],
      expires_at: '2099-01-01T00:00:00Z',
    });
    expect(res.status).toBe(201);
    expect(res.json).toEqual({
      id: expect.stringMatching(/^key_[A-Za-z0-9_-]{16}$/),
      key: expect.stringMatching(/^sb-[A-Za-z0-9_-]{43}$/),
      prefix: res.json.key.slice(0, 11),
      name: 'CI bot',
      tenant: 'team-a',
      source: 'admin',
      enabled: true,
      status: 'active',
      rpm: 60,
      tpm: 100000,
      max_concurrent: null,
      priority: 'low',
      models: ['m1'],
      expires_at: '2099-01-01T00:00:00.000Z',
      created_at: expect.stringMatching(ISO),
      last_used_at: null,
      revoked_at: null,
    });
    expect(Buffer.from(res.json.key.slice(3), 'base64url')).toHaveLength(32);

    const { id, key } = res.json;
    const one = await adminCall(gw, 'GET', `/admin/keys/${id}`);
    const { key: _shownOnce, ...described } = res.json;
    expect(one.json).toEqual(described);
    const list = await adminCall(gw, 'GET', '/admin/keys');
    expect(list.json.data).toContainEqual(described);
    for (const text of [one.text, list.text]) {
      expect(text).not.toContain(key.slice(11));
      expect(text).not.toContain(sha256(key));
    }
  });

  it('stores only the SHA-256 of the key and its display prefix', async () => {
    const { id, key, prefix } = await createKey(gw, { name: 'stored', tenant: 'team-a' });
    const stored = await row(gw, id);
    expect(stored).toMatchObject({ id, name: 'stored', tenant: 'team-a', key_hash: sha256(key), prefix, source: 'admin' });
    expect(JSON.stringify(stored)).not.toContain(key.slice(11));
  });

  it('lists keys from the config file with source config and no prefix', async () => {
    const res = await adminCall(gw, 'GET', '/admin/keys/cfg_nightly');
    expect(res.status).toBe(200);
    expect(res.json).toMatchObject({ id: 'cfg_nightly', name: 'nightly', tenant: 'batch', source: 'config', prefix: null, rpm: 5, status: 'active' });
    expect((await row(gw, 'cfg_nightly')).key_hash).toBe(sha256(CONFIG_KEY));
  });

  it('changes a key with PATCH; null clears a setting', async () => {
    const { id } = await createKey(gw, { name: 'patched', tenant: 'team-a', rpm: 1, models: ['m1'] });
    const res = await adminCall(gw, 'PATCH', `/admin/keys/${id}`, { name: 'renamed', tenant: 'team-b', rpm: null, tpm: 7, priority: 'high', models: null });
    expect(res.status).toBe(200);
    expect(res.json).toMatchObject({ id, name: 'renamed', tenant: 'team-b', rpm: null, tpm: 7, priority: 'high', models: null });
    expect(await row(gw, id)).toMatchObject({ name: 'renamed', tenant: 'team-b', rpm: null, priority: 'high', models: null });
    expect(Number((await row(gw, id)).tpm)).toBe(7);
  });

  it('revokes a key at once with PATCH {enabled: false}, and restores it with {enabled: true}', async () => {
    const { id, key } = await createKey(gw, { name: 'revocable', tenant: 'team-a' });
    // The key works (no worker: the request gets past authentication to routing).
    expect((await post(gw.url, '/v1/chat/completions', chat('nope'), { 'x-api-key': key })).json.error.code).toBe('model_not_found');
    const revoked = await adminCall(gw, 'PATCH', `/admin/keys/${id}`, { enabled: false });
    expect(revoked.json).toMatchObject({ enabled: false, status: 'revoked', revoked_at: expect.stringMatching(ISO) });
    expect((await post(gw.url, '/v1/chat/completions', chat('nope'), { 'x-api-key': key })).status).toBe(401);
    expect(await row(gw, id)).toMatchObject({ enabled: expect.anything(), revoked_at: expect.anything() });
    const restored = await adminCall(gw, 'PATCH', `/admin/keys/${id}`, { enabled: true });
    expect(restored.json).toMatchObject({ enabled: true, status: 'active', revoked_at: null });
    expect((await post(gw.url, '/v1/chat/completions', chat('nope'), { 'x-api-key': key })).json.error.code).toBe('model_not_found');
  });

  it('deletes a key: it stops working at once and its row is gone', async () => {
    const { id, key } = await createKey(gw, { name: 'deleted', tenant: 'team-a' });
    expect((await adminCall(gw, 'DELETE', `/admin/keys/${id}`)).json).toEqual({ deleted: id });
    expect((await post(gw.url, '/v1/chat/completions', chat('nope'), { 'x-api-key': key })).status).toBe(401);
    expect(await row(gw, id)).toBeUndefined();
    expect((await adminCall(gw, 'GET', `/admin/keys/${id}`)).status).toBe(404);
  });

  it('answers 404 not_found for unknown ids', async () => {
    for (const [method, body] of [['GET'], ['PATCH', { enabled: false }], ['DELETE']] as const) {
      const res = await adminCall(gw, method, '/admin/keys/key_nope', body);
      expect(res.status).toBe(404);
      expect(res.json.error).toMatchObject({ code: 'not_found', message: "API key 'key_nope' not found" });
    }
  });

  it('keeps keys from the config file: only enabled may change, DELETE is a 409', async () => {
    expect((await adminCall(gw, 'PATCH', '/admin/keys/cfg_nightly', { rpm: 1 })).status).toBe(409);
    const del = await adminCall(gw, 'DELETE', '/admin/keys/cfg_nightly');
    expect(del.status).toBe(409);
    expect(del.json.error.message).toMatch(/config file.*PATCH \{"enabled": false\}/);
    expect((await adminCall(gw, 'PATCH', '/admin/keys/cfg_nightly', { enabled: false })).json.status).toBe('revoked');
    // Keys are not required here, but a revoked key is known: refused, not forwarded as a backend credential.
    expect((await fetch(`${gw.url}/v1/models`, { headers: { authorization: `Bearer ${CONFIG_KEY}` } })).status).toBe(401);
    expect((await adminCall(gw, 'PATCH', '/admin/keys/cfg_nightly', { enabled: true })).json.status).toBe('active');
  });

  describe('validation (400 invalid_request naming every problem)', () => {
    it('requires name and tenant', async () => {
      const res = await adminCall(gw, 'POST', '/admin/keys', {});
      expect(res.status).toBe(400);
      expect(res.json.error).toMatchObject({ code: 'invalid_request' });
      expect(res.json.error.message).toBe('name is required; tenant is required');
    });

    it('rejects bad values and unknown fields, all at once', async () => {
      const res = await adminCall(gw, 'POST', '/admin/keys', {
        name: '',
        tenant: 'bad tenant!',
        rpm: -1,
        tpm: 'lots',
        priority: 'urgent',
        models: 'm1',
        expires_at: '2001-01-01T00:00:00Z',
        key: 'sb-bring-your-own',
      });
      expect(res.status).toBe(400);
      const problems = res.json.error.message.split('; ');
      expect(problems).toEqual([
        expect.stringMatching(/^key is not a key setting/),
        'name must be 1-128 characters without control characters',
        'tenant must be a tenant id: 1-64 characters of A-Z a-z 0-9 . _ -',
        'rpm must be an integer >= 0, got -1',
        'tpm must be an integer >= 0, got "lots"',
        'priority must be one of high, normal, low',
        expect.stringMatching(/^models must be a list of 1-1000 model names/),
        'expires_at must be in the future',
      ]);
      const patch = await adminCall(gw, 'PATCH', '/admin/keys/cfg_nightly', { enabled: 'no', name: null, expires_at: 'soon' });
      expect(patch.status).toBe(400);
      expect(patch.json.error.message.split('; ')).toHaveLength(3);
    });

    it('rejects bodies that are not a JSON object', async () => {
      for (const body of ['{"name":', '[1]', '']) {
        const res = await fetch(`${gw.url}/admin/keys`, {
          method: 'POST',
          headers: { authorization: 'Bearer test-admin-token', 'content-type': 'application/json' },
          body,
        });
        expect(res.status).toBe(400);
        expect(((await res.json()) as any).error.code).toBe('invalid_request');
      }
    });

    it('needs the admin token', async () => {
      expect((await admin(gw.url, 'GET', '/admin/keys', 'wrong')).status).toBe(401);
      expect((await fetch(`${gw.url}/admin/keys`, { method: 'POST', body: '{}' })).status).toBe(401);
    });
  });

  it('writes last_used_at behind the request (shown at once by the API, in the database after a flush)', async () => {
    const { id, key } = await createKey(gw, { name: 'used', tenant: 'team-a' });
    expect((await adminCall(gw, 'GET', `/admin/keys/${id}`)).json.last_used_at).toBeNull();
    await post(gw.url, '/v1/chat/completions', chat('nope'), { authorization: `Bearer ${key}` });
    const shown = (await adminCall(gw, 'GET', `/admin/keys/${id}`)).json.last_used_at;
    expect(shown).toMatch(ISO);
    const stored = await eventually(async () => (await row(gw, id)).last_used_at);
    expect(Number(stored)).toBe(Date.parse(shown));
  });
});

describe('admin API: keys across a restart', () => {
  let dir: string;
  let databaseUrl: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'sb-keys-restart-'));
    databaseUrl = `sqlite:${join(dir, 'switchboard.db')}`;
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('keeps keys, revocations and last_used_at (written at shutdown, not on the request path)', async () => {
    // A flush period far beyond the test: only the shutdown flush can write last_used_at.
    const first = await startGateway({ DATABASE_URL: databaseUrl, REQUIRE_API_KEYS: 'true', API_KEY_LAST_USED_FLUSH_SECS: '3600' });
    const kept = await createKey(first, { name: 'kept', tenant: 'team-a', rpm: 3 });
    const revoked = await createKey(first, { name: 'revoked', tenant: 'team-a' });
    await adminCall(first, 'PATCH', `/admin/keys/${revoked.id}`, { enabled: false });
    await post(first.url, '/v1/chat/completions', chat('nope'), { 'x-api-key': kept.key });
    const usedAt = (await adminCall(first, 'GET', `/admin/keys/${kept.id}`)).json.last_used_at;
    expect(usedAt).toMatch(ISO);
    expect((await row(first, kept.id)).last_used_at).toBeNull();
    await first.close();

    const second = await startGateway({ DATABASE_URL: databaseUrl, REQUIRE_API_KEYS: 'true' });
    try {
      expect((await adminCall(second, 'GET', `/admin/keys/${kept.id}`)).json).toMatchObject({ rpm: 3, status: 'active', last_used_at: usedAt });
      expect((await adminCall(second, 'GET', `/admin/keys/${revoked.id}`)).json.status).toBe('revoked');
      expect((await post(second.url, '/v1/chat/completions', chat('nope'), { 'x-api-key': kept.key })).json.error.code).toBe('model_not_found');
      expect((await post(second.url, '/v1/chat/completions', chat('nope'), { 'x-api-key': revoked.key })).status).toBe(401);
    } finally {
      await second.close();
    }
  });
});

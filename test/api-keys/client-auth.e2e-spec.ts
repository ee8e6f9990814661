import { connect } from 'node:net';
import { createHash } from 'node:crypto';
import OpenAI from 'openai';
import Anthropic from '@anthropic-ai/sdk';
import { startGateway, TestGateway } from '../support/gateway';
import { chat, post } from '../support/http';
import { ScriptedWorker } from '../support/scripted-worker';
import { adminCall, anthropicMessage, answerNext, chatCompletion, clientAuthFailures, configFile, createKey } from './support';

/** A key declared in the config file that expired long ago (the API refuses past expiry dates). */
const EXPIRED_KEY = 'sb-expired-config-key-0123456789abcdefghijklmnopq';
const sha256 = (s: string) => createHash('sha256').update(s).digest('hex');

const message = { model: 'm1', max_tokens: 16, messages: [{ role: 'user' as const, content: 'hi' }] };

/** The error body of a failed SDK call (both SDKs keep it in `error`). */
function openAiError(err: unknown): Record<string, any> {
  expect(err).toBeInstanceOf(OpenAI.APIError);
  return (err as InstanceType<typeof OpenAI.APIError>).error as Record<string, any>;
}
function anthropicError(err: unknown): Record<string, any> {
  expect(err).toBeInstanceOf(Anthropic.APIError);
  return ((err as InstanceType<typeof Anthropic.APIError>).error as Record<string, any>).error;
}

describe('client API keys: REQUIRE_API_KEYS=true', () => {
  let gw: TestGateway;
  let worker: ScriptedWorker;
  let key: string;

  beforeAll(async () => {
    const file = configFile(
      [
        'routing:',
        '  aliases: {gpt-x: m2}',
        'tenants:',
        '  team-a: {max_priority: normal}',
        'keys:',
        '  - name: expired-bot',
        '    tenant: team-a',
        `    key_sha256: ${sha256(EXPIRED_KEY)}`,
        '    expires_at: 2020-01-01T00:00:00Z',
      ].join('\n'),
    );
    gw = await startGateway({ REQUIRE_API_KEYS: 'true', CONFIG_FILE: file, CLIENT_AUTH_FAILURE_LIMIT: '1000' });
    ({ worker } = await ScriptedWorker.register(gw.workerUrl, { models: ['m1', 'm2'], max_concurrent: 4 }));
    ({ key } = await createKey(gw, { name: 'app', tenant: 'team-a' }));
  });
  afterAll(async () => {
    worker.close();
    await gw.close();
  });

  describe('a valid key', () => {
    it('works as a bearer token (OpenAI SDK), and the worker never sees it', async () => {
      const openai = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: key, maxRetries: 0 });
      const pending = openai.chat.completions.create({ model: 'm1', messages: [{ role: 'user', content: 'hi' }] });
      const frame = await answerNext(worker, chatCompletion);
      expect((await pending).choices[0].message.content).toBe('hello');
      expect(frame.headers).not.toHaveProperty('authorization');
      expect(frame.headers['x-tenant-id']).toBe('team-a');
      expect(JSON.stringify(frame)).not.toContain(key);
    });

    it('works in x-api-key (Anthropic SDK), and the worker never sees it', async () => {
      const anthropic = new Anthropic({ baseURL: gw.url, apiKey: key, maxRetries: 0 });
      const pending = anthropic.messages.create(message);
      const frame = await answerNext(worker, anthropicMessage);
      expect((await pending).content).toEqual([{ type: 'text', text: 'hello' }]);
      expect(frame.headers).not.toHaveProperty('x-api-key');
      expect(frame.headers['anthropic-version']).toBeDefined();
      expect(JSON.stringify(frame)).not.toContain(key);
    });

    it('lets a backend credential in the other header through to the worker', async () => {
      const pending = post(gw.url, '/v1/chat/completions', chat('m1'), { 'x-api-key': key, authorization: 'Bearer backend-token' });
      const frame = await answerNext(worker, chatCompletion);
      expect((await pending).status).toBe(200);
      expect(frame.headers.authorization).toBe('Bearer backend-token');
      expect(frame.headers).not.toHaveProperty('x-api-key');
    });

    it('opens GET /v1/models (OpenAI SDK), and so does x-api-key', async () => {
      const openai = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: key, maxRetries: 0 });
      const models = [];
      for await (const m of openai.models.list()) models.push(m.id);
      expect(models.sort()).toEqual(['gpt-x', 'm1', 'm2']);
      const res = await fetch(`${gw.url}/v1/models`, { headers: { 'x-api-key': key } });
      expect(res.status).toBe(200);
    });
  });

  describe("refused keys answer 401 invalid_api_key in the caller's dialect", () => {
    let revoked: string;
    let deleted: string;
    beforeAll(async () => {
      const r = await createKey(gw, { name: 'to-revoke', tenant: 'team-a' });
      expect((await adminCall(gw, 'PATCH', `/admin/keys/${r.id}`, { enabled: false })).json.status).toBe('revoked');
      revoked = r.key;
      const d = await createKey(gw, { name: 'to-delete', tenant: 'team-a' });
      expect((await adminCall(gw, 'DELETE', `/admin/keys/${d.id}`)).status).toBe(200);
      deleted = d.key;
    });

    const cases: Array<[string, () => string]> = [
      ['an unknown key', () => 'sb-AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA'],
      ['a credential that is not a gateway key', () => 'some-backend-key'],
      ['a revoked key (PATCH enabled:false)', () => revoked],
      ['a deleted key', () => deleted],
      ['an expired key', () => EXPIRED_KEY],
    ];

    it.each(cases)('%s, OpenAI SDK', async (_label, presented) => {
      const openai = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: presented(), maxRetries: 0 });
      const err = await openai.chat.completions.create({ model: 'm1', messages: [{ role: 'user', content: 'hi' }] }).catch((e) => e);
      expect(err).toBeInstanceOf(OpenAI.AuthenticationError);
      expect(openAiError(err)).toEqual({
        message: 'Invalid API key',
        type: 'authentication_error',
        code: 'invalid_api_key',
        param: null,
        kind: 'ADMISSION_REJECT',
        retriable: false,
      });
    });

    it.each(cases)('%s, Anthropic SDK', async (_label, presented) => {
      const anthropic = new Anthropic({ baseURL: gw.url, apiKey: presented(), maxRetries: 0 });
      const err = await anthropic.messages.create(message).catch((e) => e);
      expect(err).toBeInstanceOf(Anthropic.AuthenticationError);
      expect(anthropicError(err)).toEqual({
        type: 'authentication_error',
        message: 'Invalid API key',
        code: 'invalid_api_key',
        kind: 'ADMISSION_REJECT',
        retriable: false,
      });
    });

    it.each(cases)('%s, GET /v1/models', async (_label, presented) => {
      const openai = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: presented(), maxRetries: 0 });
      const err = await openai.models.list().catch((e) => e);
      expect(err).toBeInstanceOf(OpenAI.AuthenticationError);
      expect(openAiError(err).code).toBe('invalid_api_key');
    });

    it('no key at all, on every route, in both dialects', async () => {
      for (const path of ['/v1/chat/completions', '/v1/completions', '/v1/responses', '/v1/embeddings']) {
        const res = await post(gw.url, path, chat('m1'));
        expect(res.status).toBe(401);
        expect(res.json.error).toMatchObject({ code: 'invalid_api_key', type: 'authentication_error' });
        expect(res.json.error.message).toMatch(/Authorization: Bearer <key> or x-api-key: <key>/);
      }
      const anthropic = await post(gw.url, '/v1/messages', message);
      expect(anthropic.status).toBe(401);
      expect(anthropic.json).toEqual({ type: 'error', error: expect.objectContaining({ type: 'authentication_error', code: 'invalid_api_key' }) });
      const models = await fetch(`${gw.url}/v1/models`);
      expect(models.status).toBe(401);
      expect(((await models.json()) as any).error.code).toBe('invalid_api_key');
    });

    it('before looking at the body (a 401, not a 400, for a malformed body)', async () => {
      const res = await post(gw.url, '/v1/chat/completions', '{"model":', { authorization: 'Bearer sb-nope' });
      expect(res.status).toBe(401);
    });

    it('and none of those requests reached the worker', () => {
      expect(worker.has('request')).toBe(false);
    });

    it('and counts them in switchboard_client_auth_failures_total{reason}', async () => {
      const counts = await clientAuthFailures(gw);
      expect(counts.missing).toBeGreaterThanOrEqual(6);
      expect(counts.invalid).toBeGreaterThanOrEqual(9);
      expect(counts.revoked).toBeGreaterThanOrEqual(3);
      expect(counts.expired).toBeGreaterThanOrEqual(3);
    });
  });

  describe('tenant', () => {
    it("is the key's: x-tenant-id naming another tenant is refused 403 tenant_mismatch, in both dialects", async () => {
      const res = await post(gw.url, '/v1/chat/completions', chat('m1'), { authorization: `Bearer ${key}`, 'x-tenant-id': 'team-b' });
      expect(res.status).toBe(403);
      expect(res.json.error).toMatchObject({ code: 'tenant_mismatch', type: 'permission_error', param: 'x-tenant-id', retriable: false });
      const anthropic = new Anthropic({ baseURL: gw.url, apiKey: key, maxRetries: 0, defaultHeaders: { 'x-tenant-id': 'team-b' } });
      const err = await anthropic.messages.create(message).catch((e) => e);
      expect(err).toBeInstanceOf(Anthropic.PermissionDeniedError);
      expect(anthropicError(err)).toMatchObject({ type: 'permission_error', code: 'tenant_mismatch' });
    });

    it("may be named when it is the key's own, and is forwarded as the resolved tenant", async () => {
      const pending = post(gw.url, '/v1/chat/completions', chat('m1'), { authorization: `Bearer ${key}`, 'x-tenant-id': 'team-a' });
      const frame = await answerNext(worker, chatCompletion);
      expect((await pending).status).toBe(200);
      expect(frame.headers['x-tenant-id']).toBe('team-a');
    });

    it('a malformed or over-long x-tenant-id is a 400', async () => {
      for (const tenant of ['x'.repeat(65), 'a b', 'ü']) {
        const res = await post(gw.url, '/v1/chat/completions', chat('m1'), { authorization: `Bearer ${key}`, 'x-tenant-id': tenant });
        expect(res.status).toBe(400);
        expect(res.json.error).toMatchObject({ code: 'invalid_request', param: 'x-tenant-id' });
      }
    });
  });

  describe('model restriction', () => {
    it("refuses models outside the key's list with 403 model_not_allowed (after alias resolution)", async () => {
      const restricted = await createKey(gw, { name: 'only-m1', tenant: 'team-a', models: ['m1'] });
      const openai = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: restricted.key, maxRetries: 0 });
      const err = await openai.chat.completions.create({ model: 'm2', messages: [{ role: 'user', content: 'hi' }] }).catch((e) => e);
      expect(err).toBeInstanceOf(OpenAI.PermissionDeniedError);
      expect(openAiError(err).code).toBe('model_not_allowed');
      // gpt-x is an alias of m2: judged by what it resolves to.
      const alias = await post(gw.url, '/v1/chat/completions', chat('gpt-x'), { authorization: `Bearer ${restricted.key}` });
      expect(alias.status).toBe(403);
      expect(alias.json.error.code).toBe('model_not_allowed');
      const pending = openai.chat.completions.create({ model: 'm1', messages: [{ role: 'user', content: 'hi' }] });
      await answerNext(worker, chatCompletion);
      expect((await pending).model).toBe('m1');
      const onlyM2 = await createKey(gw, { name: 'only-m2', tenant: 'team-a', models: ['m2'] });
      const viaAlias = post(gw.url, '/v1/chat/completions', chat('gpt-x'), { authorization: `Bearer ${onlyM2.key}` });
      const frame = await answerNext(worker, chatCompletion);
      expect((await viaAlias).status).toBe(200);
      expect(JSON.parse(frame.body).model).toBe('m2');
    });

    it('allows only what both the key and its tenant allow', async () => {
      expect((await adminCall(gw, 'PUT', '/admin/tenants/team-m', { models: ['m2'] })).status).toBe(200);
      const both = await createKey(gw, { name: 'm1-and-m2', tenant: 'team-m', models: ['m1', 'm2'] });
      const m1 = await post(gw.url, '/v1/chat/completions', chat('m1'), { 'x-api-key': both.key });
      expect(m1.status).toBe(403);
      expect(m1.json.error.code).toBe('model_not_allowed');
      const pending = post(gw.url, '/v1/chat/completions', chat('m2'), { 'x-api-key': both.key });
      await answerNext(worker, chatCompletion);
      expect((await pending).status).toBe(200);
    });
  });

  describe('bad header values', () => {
    it('a key with a tab or non-ASCII characters is a 400 naming the header', async () => {
      for (const value of ['sb-abc\tdef', 'sb-caf\u00e9']) {
        const res = await post(gw.url, '/v1/chat/completions', chat('m1'), { 'x-api-key': value });
        expect(res.status).toBe(400);
        expect(res.json.error).toMatchObject({ code: 'invalid_request', param: 'x-api-key' });
      }
    });

    it('a header with a control character never reaches the gateway (Node answers 400)', async () => {
      const url = new URL(gw.url);
      // Written raw: Node's and undici's clients refuse to send such a header themselves.
      const status = await new Promise<number>((resolve, reject) => {
        const socket = connect(Number(url.port), url.hostname, () => socket.write('GET /v1/models HTTP/1.1\r\nHost: x\r\nx-api-key: sb-a\x01b\r\n\r\n'));
        let data = '';
        socket.on('data', (chunk) => {
          data += chunk.toString();
          const m = /^HTTP\/1\.1 (\d{3})/.exec(data);
          if (m) {
            socket.destroy();
            resolve(Number(m[1]));
          }
        });
        socket.on('error', reject);
      });
      expect(status).toBe(400);
    });
  });
});

describe('client API keys: brute force', () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startGateway({ REQUIRE_API_KEYS: 'true', CLIENT_AUTH_FAILURE_LIMIT: '3', CLIENT_AUTH_BLOCK_SECS: '600' });
  });
  afterAll(() => gw.close());

  it('refuses an address with 429 auth_rate_limited after repeated unknown keys, but never a valid key (issue 16 M8)', async () => {
    const { key } = await createKey(gw, { name: 'valid', tenant: 'default' });
    for (let i = 0; i < 3; i++) {
      const res = await post(gw.url, '/v1/chat/completions', chat('m1'), { authorization: `Bearer sb-guess-${i}` });
      expect(res.status).toBe(401);
    }
    const blocked = await post(gw.url, '/v1/chat/completions', chat('m1'), { authorization: 'Bearer sb-guess-3' });
    expect(blocked.status).toBe(429);
    expect(blocked.headers.get('retry-after')).toBe('600');
    expect(blocked.json.error).toMatchObject({ code: 'auth_rate_limited', type: 'rate_limit_error', retriable: true, retry_after_ms: 600_000 });
    const guesser = new Anthropic({ baseURL: gw.url, apiKey: 'sb-guess-4', maxRetries: 0 });
    const err = await guesser.messages.create(message).catch((e) => e);
    expect(err).toBeInstanceOf(Anthropic.RateLimitError);
    // The valid key passes authentication from the blocked address (no worker serves m1: 404 after it).
    const valid = await post(gw.url, '/v1/chat/completions', chat('m1'), { authorization: `Bearer ${key}` });
    expect([valid.status, valid.json.error.code]).toEqual([404, 'model_not_found']);
    expect(await clientAuthFailures(gw)).toEqual({ invalid: 3, rate_limited: 2 });
  });
});

describe('client API keys: not required (default)', () => {
  let gw: TestGateway;
  let worker: ScriptedWorker;
  beforeAll(async () => {
    gw = await startGateway();
    ({ worker } = await ScriptedWorker.register(gw.workerUrl, { models: ['m1'], max_concurrent: 4 }));
  });
  afterAll(async () => {
    worker.close();
    await gw.close();
  });

  it('forwards a backend credential as before, in both headers', async () => {
    const pending = post(gw.url, '/v1/chat/completions', chat('m1'), { authorization: 'Bearer backend-key', 'x-api-key': 'anthropic-backend-key' });
    const frame = await answerNext(worker, chatCompletion);
    expect((await pending).status).toBe(200);
    expect(frame.headers).toMatchObject({ authorization: 'Bearer backend-key', 'x-api-key': 'anthropic-backend-key', 'x-tenant-id': 'default' });
  });

  it("authenticates a gateway key when one is sent: the key's tenant, the key stripped", async () => {
    const { key } = await createKey(gw, { name: 'optional', tenant: 'team-z' });
    const openai = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: key, maxRetries: 0 });
    const pending = openai.chat.completions.create({ model: 'm1', messages: [{ role: 'user', content: 'hi' }] });
    const frame = await answerNext(worker, chatCompletion);
    await pending;
    expect(frame.headers).not.toHaveProperty('authorization');
    expect(frame.headers['x-tenant-id']).toBe('team-z');
  });

  it('refuses an unknown sb- key instead of forwarding it', async () => {
    const res = await post(gw.url, '/v1/chat/completions', chat('m1'), { authorization: 'Bearer sb-mistyped' });
    expect(res.status).toBe(401);
    expect(res.json.error.code).toBe('invalid_api_key');
    expect(worker.has('request')).toBe(false);
  });

  it('keeps GET /v1/models open', async () => {
    expect((await fetch(`${gw.url}/v1/models`)).status).toBe(200);
  });
});

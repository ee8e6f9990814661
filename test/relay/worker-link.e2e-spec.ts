import { writeFileSync, mkdtempSync } from 'node:fs';
import { Logger } from '@nestjs/common';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startGateway, TestGateway, TEST_ADMIN_TOKEN, TEST_SECRET } from '../support/gateway';
import { ScriptedWorker } from '../support/scripted-worker';
import { admin, chat, eventually, post } from '../support/http';

function configFile(yaml: string): string {
  const path = join(mkdtempSync(join(tmpdir(), 'sb-cfg-')), 'switchboard.yaml');
  writeFileSync(path, yaml);
  return path;
}

describe('worker link: authentication', () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startGateway({
      CONFIG_FILE: configFile(`
providers:
  - name: off
    secret: off-secret
    enabled: false
  - name: small
    secret: small-secret
    max_models: 2
  - name: binary
    secret: binary-secret
  - name: big
    secret: big-secret
    max_models: 5000
`),
      AUTH_FAILURE_LIMIT: '1000',
      // Some tests here send register frames above the default 64 KiB pre-registration frame cap.
      WORKER_REGISTER_FRAME_BYTES: String(1024 * 1024),
    });
  });
  afterAll(() => gw.close());

  it('accepts the secret in the x-worker-secret header', async () => {
    const { worker, ack } = await ScriptedWorker.register(gw.workerUrl, { models: ['a'] });
    expect(ack.worker_id).toMatch(/^w-/);
    worker.close();
  });

  it('accepts the legacy worker_secret query parameter', async () => {
    const { worker, ack } = await ScriptedWorker.register(gw.workerUrl, { models: ['a'] }, { secretInQuery: TEST_SECRET });
    expect(ack.type).toBe('register_ack');
    worker.close();
  });

  it('ignores the query secret when a (wrong) header is present', async () => {
    const worker = await ScriptedWorker.connect(gw.workerUrl, { secret: 'wrong', headers: {} });
    // connect() puts the wrong secret in the header; add the right one to the query by hand
    worker.close();
    const url = new URL(gw.workerUrl);
    url.searchParams.set('worker_secret', TEST_SECRET);
    const w2 = await ScriptedWorker.connect(url.toString(), { secret: 'wrong' });
    expect(await w2.closed).toEqual({ code: 1008, reason: 'worker authentication failed' });
  });

  it.each([
    ['a wrong secret', { secret: 'nope' }],
    ['no secret', { secret: null }],
    ['an unknown provider', { provider: 'nobody' }],
    ['a disabled provider', { provider: 'off', secret: 'off-secret' }],
  ])('closes 1008 for %s', async (_label, options) => {
    const worker = await ScriptedWorker.connect(gw.workerUrl, options as never);
    expect(await worker.closed).toEqual({ code: 1008, reason: 'worker authentication failed' });
  });

  it('answers the upgrade with an X-Correlation-Id (echoed, or minted)', async () => {
    const WebSocket = (await import('ws')).default;
    const upgradeHeaders = (headers: Record<string, string>) =>
      new Promise<Record<string, string | string[] | undefined>>((resolve, reject) => {
        const ws = new WebSocket(gw.workerUrl, { headers: { 'x-worker-secret': 'irrelevant', ...headers } });
        ws.on('upgrade', (res) => {
          resolve(res.headers);
          ws.terminate();
        });
        ws.on('error', reject);
      });
    expect((await upgradeHeaders({ 'x-correlation-id': 'ws-trace-1' }))['x-correlation-id']).toBe('ws-trace-1');
    expect((await upgradeHeaders({}))['x-correlation-id']).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('authenticates against the named provider', async () => {
    const { worker, ack } = await ScriptedWorker.register(gw.workerUrl, { models: ['x'] }, { provider: 'small', secret: 'small-secret' });
    expect(ack.models).toEqual(['x']);
    worker.close();
  });

  it('sanitizes models: trims, drops empties and duplicates in first-seen order, caps at the provider limit', async () => {
    const { worker, ack } = await ScriptedWorker.register(
      gw.workerUrl,
      { models: [' b ', 'a', '', 'b', 'c', '  '] },
      { provider: 'small', secret: 'small-secret' },
    );
    expect(ack.models).toEqual(['b', 'a']);
    expect(ack.warnings).toEqual(
      expect.arrayContaining([expect.stringMatching(/empty/), expect.stringMatching(/duplicate/), expect.stringMatching(/truncated/)]),
    );
    worker.close();
  });

  it('drops model names longer than 256 characters with a warning', async () => {
    const long = 'm'.repeat(257);
    const { worker, ack } = await ScriptedWorker.register(gw.workerUrl, { models: ['ok', long, 'n'.repeat(256)] });
    expect(ack.models).toEqual(['ok', 'n'.repeat(256)]);
    expect(ack.warnings).toEqual(['dropped 1 model name longer than 256 characters']);
    worker.close();
  });

  it('caps the model list at 1,024 entries even when the provider allows more', async () => {
    const models = Array.from({ length: 1500 }, (_, i) => `model-${i}`);
    const { worker, ack } = await ScriptedWorker.register(gw.workerUrl, { models }, { provider: 'big', secret: 'big-secret' });
    expect(ack.models).toEqual(models.slice(0, 1024));
    expect(ack.warnings).toEqual(['model list truncated from 1500 to 1024 entries (gateway limit)']);
    worker.close();
  });

  it('caps the model list at 65,536 characters of names in total', async () => {
    const models = Array.from({ length: 300 }, (_, i) => `${String(i).padStart(3, '0')}${'t'.repeat(247)}`); // 250 characters each
    const { worker, ack } = await ScriptedWorker.register(gw.workerUrl, { models }, { provider: 'big', secret: 'big-secret' });
    expect(ack.models).toEqual(models.slice(0, 262));
    expect(ack.warnings).toEqual(['model list truncated from 300 to 262 entries (model names above 65536 characters in total)']);
    worker.close();
  });

  it('applies the same model limits to models_update', async () => {
    const { worker } = await ScriptedWorker.register(gw.workerUrl, { models: ['before-update'], worker_name: 'updating' });
    worker.send({ type: 'models_update', models: ['after-update', 'u'.repeat(300)], current_load: 0 });
    const listed = async () =>
      ((await admin(gw.url, 'GET', '/admin/workers', TEST_ADMIN_TOKEN)).json.data as Array<{ name: string; models: string[] }>).find(
        (w) => w.name === 'updating',
      )?.models;
    await eventually(async () => JSON.stringify(await listed()) === JSON.stringify(['after-update']));
    worker.close();
  });

  it('truncates a worker name above 255 characters and lowers max_concurrent above 4,096, with warnings', async () => {
    const name = 'w'.repeat(1000);
    const { worker, ack } = await ScriptedWorker.register(gw.workerUrl, { models: ['a'], worker_name: name, max_concurrent: 1_000_000 });
    expect(ack.warnings).toEqual(['worker_name truncated to 255 characters', 'max_concurrent lowered from 1000000 to 4096 (gateway limit)']);
    const listed = (await admin(gw.url, 'GET', '/admin/workers', TEST_ADMIN_TOKEN)).json.data.find((w: { id: string }) => w.id === ack.worker_id);
    expect(listed).toMatchObject({ name: 'w'.repeat(255), max_concurrent: 4096 });
    worker.close();
  });

  it('closes 1002 on a register with more than 65,536 model entries', async () => {
    const worker = await ScriptedWorker.connect(gw.workerUrl);
    worker.send({ type: 'register', worker_name: 'flood', models: new Array(65_537).fill(''), max_concurrent: 1 });
    expect(await worker.closed).toEqual({ code: 1002, reason: 'worker registration protocol error' });
    expect(worker.count('register_ack')).toBe(0);
  });

  it('omits warnings when nothing was dropped and echoes the protocol version', async () => {
    const { worker, ack } = await ScriptedWorker.register(gw.workerUrl, { models: ['a'] });
    expect(ack).not.toHaveProperty('warnings');
    expect(ack.protocol_version).toBe('2026-04-bridge-v1');
    worker.close();
  });

  it('warns when a worker registers without routable models', async () => {
    const { worker, ack } = await ScriptedWorker.register(gw.workerUrl, { models: ['', ' '] });
    expect(ack.models).toEqual([]);
    expect(ack.warnings).toContain('worker registered without any routable models');
    worker.close();
  });

  it('accepts a legacy worker without protocol_version and omits it from the ack', async () => {
    const { worker, ack } = await ScriptedWorker.register(gw.workerUrl, { models: ['a'], protocol_version: null });
    expect(ack).not.toHaveProperty('protocol_version');
    worker.close();
  });

  it('closes 1002 on a protocol version mismatch', async () => {
    const worker = await ScriptedWorker.connect(gw.workerUrl);
    worker.send({ type: 'register', worker_name: 'w', models: ['a'], max_concurrent: 1, protocol_version: '1999-01-old' });
    expect(await worker.closed).toEqual({ code: 1002, reason: 'worker registration protocol error' });
  });

  it.each([
    ['a first frame that is not register', { type: 'pong', current_load: 0 }],
    ['invalid JSON', '{not json'],
    ['a register without models', { type: 'register', worker_name: 'w', max_concurrent: 1 }],
  ])('closes 1002 on %s', async (_label, frame) => {
    const worker = await ScriptedWorker.connect(gw.workerUrl);
    worker.send(frame as never);
    expect(await worker.closed).toEqual({ code: 1002, reason: 'worker registration protocol error' });
  });

  it.each([
    ['a second register', { type: 'register', worker_name: 'w', models: ['a'], max_concurrent: 1 }],
    ['an unknown frame type', { type: 'telemetry', data: 1 }],
    ['a chunk for a request it does not own', { type: 'response_chunk', request_id: 'r-nope', chunk: 'x' }],
    ['bad JSON after registration', 'nope'],
  ])('closes 1002 after registration on %s', async (_label, frame) => {
    const { worker } = await ScriptedWorker.register(gw.workerUrl, { models: ['a'] });
    worker.send(frame as never);
    expect(await worker.closed).toEqual({ code: 1002, reason: 'worker registration protocol error' });
  });

  it('closes 1002 on a binary register sent while the secret is still being checked', async () => {
    // A provider no other test authenticates against: its first secret check is the slow one.
    const worker = await ScriptedWorker.connect(gw.workerUrl, { provider: 'binary', secret: 'binary-secret' });
    worker.ws.send(Buffer.from(JSON.stringify({ type: 'register', worker_name: 'bin', models: ['a'], max_concurrent: 1 })), { binary: true });
    expect(await worker.closed).toEqual({ code: 1002, reason: 'worker registration protocol error' });
    expect(worker.count('register_ack')).toBe(0);
  });

  it('closes 1002 on a binary frame after registration', async () => {
    const { worker } = await ScriptedWorker.register(gw.workerUrl, { models: ['a'] });
    worker.ws.send(Buffer.from(JSON.stringify({ type: 'pong', current_load: 0 })), { binary: true });
    expect(await worker.closed).toEqual({ code: 1002, reason: 'worker registration protocol error' });
  });

  it('does not close the connection for a worker error frame', async () => {
    const { worker } = await ScriptedWorker.register(gw.workerUrl, { models: ['a'] });
    worker.send({ type: 'error', code: 'backend_down', message: 'oops' });
    worker.send({ type: 'pong', current_load: 0 });
    const res = await fetch(`${gw.url}/v1/models`);
    expect(((await res.json()) as any).data.map((m: { id: string }) => m.id)).toContain('a');
    expect(worker.closeState).toBeUndefined();
    worker.close();
  });
});

describe('worker link: timers and rate limiting', () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startGateway({
      HEARTBEAT_INTERVAL_SECS: '0.1',
      HEARTBEAT_TIMEOUT_SECS: '0.4',
      REGISTER_TIMEOUT_SECS: '0.3',
      AUTH_FAILURE_LIMIT: '3',
      AUTH_FAILURE_WINDOW_SECS: '60',
      AUTH_BLOCK_SECS: '60',
    });
  });
  afterAll(() => gw.close());

  it('closes 1002 when no register arrives within the registration timeout', async () => {
    const worker = await ScriptedWorker.connect(gw.workerUrl);
    expect(await worker.closed).toEqual({ code: 1002, reason: 'worker registration protocol error' });
  });

  it('pings on its interval and keeps a worker that answers', async () => {
    const { worker } = await ScriptedWorker.register(gw.workerUrl, { models: ['a'] });
    for (let i = 0; i < 6; i++) {
      const ping = await worker.next('ping');
      expect(typeof ping.timestamp_unix_ms).toBe('number');
      worker.send({ type: 'pong', current_load: 0 });
    }
    expect(worker.closeState).toBeUndefined();
    worker.close();
  });

  it('closes a silent worker 1000 "worker heartbeat timed out"', async () => {
    const { worker } = await ScriptedWorker.register(gw.workerUrl, { models: ['a'] });
    expect(await worker.closed).toEqual({ code: 1000, reason: 'worker heartbeat timed out' });
    expect(worker.count('ping')).toBeGreaterThanOrEqual(2);
  });

  it('rate-limits a client after repeated failures; the right secret is still accepted (issue 16, M8)', async () => {
    for (let i = 0; i < 3; i++) {
      const bad = await ScriptedWorker.connect(gw.workerUrl, { secret: 'bad' });
      expect((await bad.closed).reason).toBe('worker authentication failed');
    }
    const guess = await ScriptedWorker.connect(gw.workerUrl, { secret: 'another-guess' });
    expect(await guess.closed).toEqual({ code: 1008, reason: 'worker authentication temporarily rate limited' });
    const { worker, ack } = await ScriptedWorker.register(gw.workerUrl, { models: ['a'] });
    expect(ack.worker_id).toMatch(/^w-/);
    worker.close();
  });
});

describe('worker link: failed-auth rate limiting per (address, provider)', () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startGateway({
      CONFIG_FILE: configFile(`
providers:
  - name: other
    secret: other-secret
`),
      AUTH_FAILURE_LIMIT: '3',
      AUTH_FAILURE_WINDOW_SECS: '60',
      AUTH_BLOCK_SECS: '60',
    });
  });
  afterAll(() => gw.close());

  it('blocks the failing provider on that address but lets workers of other providers register', async () => {
    const warn = jest.spyOn(Logger.prototype, 'warn');
    try {
      for (let i = 0; i < 3; i++) {
        const bad = await ScriptedWorker.connect(gw.workerUrl, { secret: 'stale-secret' });
        expect(await bad.closed).toEqual({ code: 1008, reason: 'worker authentication failed' });
      }
      const { worker: other, ack } = await ScriptedWorker.register(gw.workerUrl, { models: ['o'] }, { provider: 'other', secret: 'other-secret' });
      expect(ack.worker_id).toMatch(/^w-/);
      other.close();

      const guess = await ScriptedWorker.connect(gw.workerUrl, { secret: 'another-stale-secret' });
      expect(await guess.closed).toEqual({ code: 1008, reason: 'worker authentication temporarily rate limited' });
      // The right secret is recognised without a scrypt check, so the block does not apply to it (issue 16, M8).
      const { worker: good } = await ScriptedWorker.register(gw.workerUrl, { models: ['l'] });
      good.close();
      const lines = warn.mock.calls.map((c) => String(c[0]));
      expect(lines).toContainEqual(
        expect.stringMatching(/rate limited for provider "local" from .*repeated authentication failures from this address for this provider/),
      );
    } finally {
      warn.mockRestore();
    }
  });
});

describe('worker link: failed-auth rate limiting of unknown provider names', () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startGateway({ AUTH_FAILURE_LIMIT: '3', AUTH_FAILURE_WINDOW_SECS: '60', AUTH_BLOCK_SECS: '60' });
  });
  afterAll(() => gw.close());

  it('counts every unknown provider name against one entry per address, so inventing names does not dodge the limit', async () => {
    for (let i = 0; i < 3; i++) {
      const probe = await ScriptedWorker.connect(gw.workerUrl, { provider: `invented-${i}`, secret: 'guess' });
      expect(await probe.closed).toEqual({ code: 1008, reason: 'worker authentication failed' });
    }
    const next = await ScriptedWorker.connect(gw.workerUrl, { provider: 'invented-99', secret: 'guess' });
    expect(await next.closed).toEqual({ code: 1008, reason: 'worker authentication temporarily rate limited' });
    // A known provider on that address is not blocked by the guessing.
    const { worker, ack } = await ScriptedWorker.register(gw.workerUrl, { models: ['still-fine'] });
    expect(ack.worker_id).toMatch(/^w-/);
    worker.close();
  });
});

describe('worker link: periodic model refresh', () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startGateway({ MODELS_REFRESH_INTERVAL_SECS: '0.1' });
  });
  afterAll(() => gw.close());

  it('asks every worker to refresh its models on the configured period and applies the answer', async () => {
    const { worker } = await ScriptedWorker.register(gw.workerUrl, { models: ['old-model'] });
    expect(await worker.next('models_refresh')).toEqual({ type: 'models_refresh', reason: 'periodic' });
    worker.send({ type: 'models_update', models: ['new-model'], current_load: 0 });
    const ids = async () => ((await (await fetch(`${gw.url}/v1/models`)).json()) as any).data.map((m: { id: string }) => m.id);
    await eventually(async () => (await ids()).includes('new-model'));
    expect(await ids()).not.toContain('old-model');
    await worker.next('models_refresh');
    worker.close();
  });
});

describe('worker link: while the gateway shuts down', () => {
  it('refuses a new worker with 1012 "gateway restarting" before authenticating it, without counting an auth failure', async () => {
    const gw = await startGateway({ SHUTDOWN_DRAIN_TIMEOUT_SECS: '10' });
    const { worker: busy } = await ScriptedWorker.register(gw.workerUrl, { models: ['in-flight'], worker_name: 'busy' });
    let closing: Promise<void> | undefined;
    try {
      const inFlight = post(gw.url, '/v1/chat/completions', chat('in-flight'));
      const req = await busy.next('request');
      closing = gw.close();
      await busy.next('graceful_shutdown');

      // What a drained worker does: reconnect at once and register.
      const again = await ScriptedWorker.connect(gw.workerUrl);
      again.send({ type: 'register', worker_name: 'again', models: ['in-flight'], max_concurrent: 1, protocol_version: '2026-04-bridge-v1' });
      expect(await again.closed).toEqual({ code: 1012, reason: 'gateway restarting: retry soon without penalty' });
      expect(again.count('register_ack')).toBe(0);
      const workers = await admin(gw.url, 'GET', '/admin/workers', TEST_ADMIN_TOKEN);
      expect(workers.json.data.map((w: { name: string }) => w.name)).toEqual(['busy']);
      const metrics = await (await fetch(`${gw.url}/metrics`)).text();
      expect(metrics).not.toMatch(/worker_auth_failures_total\{[^}]*\} [1-9]/);

      busy.complete(req.request_id, { ok: true });
      expect((await inFlight).status).toBe(200);
      expect(await busy.closed).toEqual({ code: 1000, reason: 'graceful shutdown complete' });
    } finally {
      busy.kill();
      await (closing ?? gw.close());
    }
  });
});

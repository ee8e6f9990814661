import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { hashSecret } from '../../src/common/secret-hash';
import { startGateway, TestGateway } from '../support/gateway';
import { ScriptedWorker } from '../support/scripted-worker';
import { chat, post } from '../support/http';

function configFile(yaml: string): string {
  const path = join(mkdtempSync(join(tmpdir(), 'sb-conn-')), 'switchboard.yaml');
  writeFileSync(path, yaml);
  return path;
}

const FAILED = { code: 1008, reason: 'worker authentication failed' };
const LIMITED = { code: 1008, reason: 'worker authentication temporarily rate limited' };

async function metricValue(gw: TestGateway, pattern: RegExp): Promise<number> {
  const text = await (await fetch(`${gw.url}/metrics`)).text();
  const m = pattern.exec(text);
  return m ? Number(m[1]) : 0;
}

describe('conn: worker frames before registration', () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startGateway({
      CONFIG_FILE: configFile(`
providers:
  - name: hashed
    secret_hash: "${await hashSecret('hashed-secret')}"
`),
      MAX_WORKER_FRAME_BYTES: String(512 * 1024),
    });
  });
  afterAll(() => gw.close());

  it('closes 1009 on a frame above the register cap (64 KiB + 256 B × max_models) before the worker has registered', async () => {
    // The default provider allows 256 models: its cap is 64 KiB + 64 KiB.
    const worker = await ScriptedWorker.connect(gw.workerUrl);
    worker.send({
      type: 'register',
      worker_name: 'big-register',
      models: ['a'],
      max_concurrent: 1,
      protocol_version: '2026-04-bridge-v1',
      padding: 'x'.repeat(130 * 1024),
    });
    expect((await worker.closed).code).toBe(1009);
    expect(worker.count('register_ack')).toBe(0);
  });

  it('accepts frames up to MAX_WORKER_FRAME_BYTES once registered, and closes 1009 above it', async () => {
    const { worker } = await ScriptedWorker.register(gw.workerUrl, { models: ['big-body'] });
    const big = { text: 'y'.repeat(300 * 1024) };
    const pending = post(gw.url, '/v1/chat/completions', chat('big-body'));
    const req = await worker.next('request');
    worker.complete(req.request_id, big);
    const res = await pending;
    expect(res.status).toBe(200);
    expect(res.json).toEqual(big);

    // The request is requeued when its worker is dropped; the client gives up on it.
    const abort = new AbortController();
    const pending2 = post(gw.url, '/v1/chat/completions', chat('big-body'), {}, abort.signal).catch(() => undefined);
    const req2 = await worker.next('request');
    worker.complete(req2.request_id, { text: 'z'.repeat(600 * 1024) });
    expect((await worker.closed).code).toBe(1009);
    abort.abort();
    await pending2;
  });

  it('holds at most one frame while the secret is being checked (a second closes 1002)', async () => {
    // A secret known only by its hash: its first check runs scrypt, so the frames arrive during it.
    const worker = await ScriptedWorker.connect(gw.workerUrl, { provider: 'hashed', secret: 'hashed-secret' });
    const register = { type: 'register', worker_name: 'eager', models: ['a'], max_concurrent: 1, protocol_version: '2026-04-bridge-v1' };
    worker.send(register);
    worker.send({ type: 'pong', current_load: 0 });
    expect(await worker.closed).toEqual({ code: 1002, reason: 'worker registration protocol error' });
    // One frame (the register) is held and replayed as before.
    const { ack } = await ScriptedWorker.register(gw.workerUrl, { models: ['a'] }, { provider: 'hashed', secret: 'hashed-secret' });
    expect(ack.worker_id).toMatch(/^w-/);
  });
});

describe('conn: failed worker-secret attempts (AUTH_FAILURE_LIMIT)', () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startGateway({
      CONFIG_FILE: configFile(`
providers:
  - name: hashed
    secret_hash: "${await hashSecret('hashed-secret')}"
`),
      AUTH_FAILURE_LIMIT: '5',
      AUTH_FAILURE_WINDOW_SECS: '60',
      AUTH_BLOCK_SECS: '60',
    });
  });
  afterAll(() => gw.close());

  it('counts handshakes still being checked toward the limit: 40 parallel wrong secrets run at most 5 scrypt checks', async () => {
    const workers = await Promise.all(Array.from({ length: 40 }, () => ScriptedWorker.connect(gw.workerUrl, { provider: 'hashed', secret: 'wrong' })));
    const closes = await Promise.all(workers.map((w) => w.closed));
    const failed = closes.filter((c) => c.reason === FAILED.reason).length;
    const limited = closes.filter((c) => c.reason === LIMITED.reason).length;
    expect(failed).toBeLessThanOrEqual(5);
    expect(failed + limited).toBe(40);
    expect(await metricValue(gw, /switchboard_worker_auth_failures_total\{[^}]*reason="bad_secret"[^}]*\} (\d+)/)).toBeLessThanOrEqual(5);
  });

  it('accepts the right secret after 5 wrong ones from the same address (it was never presented before)', async () => {
    for (let i = 0; i < 5; i++) {
      const bad = await ScriptedWorker.connect(gw.workerUrl, { secret: 'not-the-secret' });
      expect(await bad.closed).toEqual(FAILED);
    }
    const stillBad = await ScriptedWorker.connect(gw.workerUrl, { secret: 'not-the-secret-either' });
    expect(await stillBad.closed).toEqual(LIMITED);
    // WORKER_SECRET is held in plain text: recognised without scrypt, so throttling does not apply.
    const { worker, ack } = await ScriptedWorker.register(gw.workerUrl, { models: ['after-failures'] });
    expect(ack.worker_id).toMatch(/^w-/);
    const pending = post(gw.url, '/v1/chat/completions', chat('after-failures'));
    const req = await worker.next('request');
    worker.complete(req.request_id, { ok: true });
    expect((await pending).status).toBe(200);
    worker.close();
  });

  it('spends no scrypt on unknown material while the address is blocked (a hash-only secret never verified is unknown)', async () => {
    // The 40 parallel attempts above blocked this address for "hashed".
    const before = await metricValue(gw, /switchboard_worker_auth_failures_total\{[^}]*reason="bad_secret"[^}]*\} (\d+)/);
    const guess = await ScriptedWorker.connect(gw.workerUrl, { provider: 'hashed', secret: 'hashed-secret' });
    expect(await guess.closed).toEqual(LIMITED);
    expect(await metricValue(gw, /switchboard_worker_auth_failures_total\{[^}]*reason="bad_secret"[^}]*\} (\d+)/)).toBe(before);
  });
});

describe('conn: one client behind a shared proxy address cannot lock out a provider', () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startGateway({
      CONFIG_FILE: configFile(`
providers:
  - name: hashed
    secret_hash: "${await hashSecret('hashed-secret')}"
`),
      AUTH_FAILURE_LIMIT: '3',
      AUTH_BLOCK_SECS: '60',
    });
  });
  afterAll(() => gw.close());

  it('lets every worker holding a verified secret in while a neighbour on the same address is blocked', async () => {
    // A first worker proves the hash-only secret once.
    const { worker: first } = await ScriptedWorker.register(gw.workerUrl, { models: ['m'] }, { provider: 'hashed', secret: 'hashed-secret' });
    // A neighbour on the same address (no TRUSTED_PROXIES: the proxy's address) guesses.
    for (let i = 0; i < 3; i++) expect(await (await ScriptedWorker.connect(gw.workerUrl, { provider: 'hashed', secret: `guess-${i}` })).closed).toEqual(FAILED);
    expect(await (await ScriptedWorker.connect(gw.workerUrl, { provider: 'hashed', secret: 'guess-x' })).closed).toEqual(LIMITED);
    // Other workers of the provider still connect, and the first one reconnects.
    first.close();
    for (let i = 0; i < 3; i++) {
      const { worker, ack } = await ScriptedWorker.register(gw.workerUrl, { models: ['m'] }, { provider: 'hashed', secret: 'hashed-secret' });
      expect(ack.worker_id).toMatch(/^w-/);
      worker.close();
    }
  });
});

describe('conn: a valid register always fits the pre-register cap (issue 16 review)', () => {
  let gw: TestGateway;
  beforeAll(async () => {
    // The largest model count a provider may allow; the frame settings stay at their defaults.
    gw = await startGateway({ MAX_MODELS_PER_WORKER: '1024' });
  });
  afterAll(() => gw.close());

  /** Sends a register and resolves with its ack, or with the close when the gateway refused it. */
  async function registerRaw(frame: Record<string, unknown>): Promise<{ ack?: Record<string, any>; closed?: { code: number } }> {
    const worker = await ScriptedWorker.connect(gw.workerUrl);
    worker.send({ type: 'register', ...frame } as { type: string });
    const outcome = await Promise.race([worker.next('register_ack').then((ack) => ({ ack })), worker.closed.then((closed) => ({ closed }))]);
    worker.close();
    return outcome;
  }

  it('accepts a register of 1024 models, each with every capability hint (about 200 KB), without 1009', async () => {
    const models = Array.from({ length: 1024 }, (_, i) => `organisation/model-family-70b-instruct-q4_k_m-${String(i).padStart(4, '0')}`);
    const capabilities = Object.fromEntries(models.map((m) => [m, { vision: true, tools: true, json_mode: true, context_length: 131072 }]));
    const frame = { worker_name: 'many-models', models, capabilities, max_concurrent: 4, protocol_version: '2026-04-bridge-v1' };
    const bytes = Buffer.byteLength(JSON.stringify({ type: 'register', ...frame }));
    expect(bytes).toBeGreaterThan(150 * 1024); // well above the flat 64 KiB cap this replaced
    const { ack, closed } = await registerRaw(frame);
    expect(closed).toBeUndefined();
    expect(ack!.models).toHaveLength(1024);
  });

  it('still refuses a pre-register frame above that cap (64 KiB + 256 KiB) with 1009', async () => {
    const { ack, closed } = await registerRaw({
      worker_name: 'padded',
      models: ['a'],
      max_concurrent: 1,
      protocol_version: '2026-04-bridge-v1',
      padding: 'x'.repeat(330 * 1024),
    });
    expect(ack).toBeUndefined();
    expect(closed!.code).toBe(1009);
  });
});

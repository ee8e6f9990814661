import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigError } from '../../src/config';
import { AuditLog } from '../../src/governance/audit-log';
import { mintOpToken, OpTokenClaims } from '../../src/governance/op-token';
import { startGateway, TestGateway, TEST_ADMIN_TOKEN } from '../support/gateway';
import { admin, eventually } from '../support/http';
import { ScriptedWorker } from '../support/scripted-worker';
import { auditRows, claimsOf, lifecycleWorker, LifecycleGateway, report, signedToken, startLifecycleGateway } from './support';

const now = () => Math.floor(Date.now() / 1000);

describe('lifecycle governance over HTTP (Ed25519, 2 of alice, bob, carol)', () => {
  let gw: LifecycleGateway;
  let workerId: string;
  let worker: ScriptedWorker;
  beforeAll(async () => {
    gw = await startLifecycleGateway();
    ({ worker, id: workerId } = await lifecycleWorker(gw, ['gov-model']));
  });
  afterAll(async () => {
    worker.close();
    await gw.close();
  });

  const load = (verifiedOpToken: unknown, modelId = 'gov-model') => gw.call('/v1/models/load', { modelId, workerId, verifiedOpToken });
  const sign = (claims: Partial<OpTokenClaims>) => signedToken({ operation: 'model-load', modelId: 'gov-model', workerId, ...claims });

  it('every verification failure has its own status and code, and is audited with what the token claimed', async () => {
    const replayed = sign({ nonce: 'replayed-nonce-1' });
    expect((await load(replayed)).status).toBe(202);
    report(worker, (await worker.next('model_load')).task_id, 'completed');
    const forged = JSON.parse(Buffer.from(sign({}), 'base64url').toString());
    forged.signatures.bob = forged.signatures.alice;
    const cases: Array<[string, unknown, number, string]> = [
      ['missing', undefined, 401, 'op_token_missing'],
      ['malformed', 'eyJub3QiOiJqc29u', 400, 'op_token_malformed'],
      ['bad signature (one of M)', Buffer.from(JSON.stringify(forged)).toString('base64url'), 401, 'op_token_bad_signature'],
      ['no configured signer', sign({ signers: ['mallory'] }), 401, 'op_token_bad_signature'],
      ['expired', sign({ issuedAt: now() - 600 }), 401, 'op_token_expired'],
      ['replayed', replayed, 401, 'op_token_replayed'],
      ['mismatch', sign({ modelId: 'another-model' }), 403, 'op_token_mismatch'],
      ['unknown signer', sign({ signers: ['alice', 'bob', 'mallory'] }), 403, 'op_token_unknown_signer'],
      ['insufficient signers', sign({ signers: ['carol'], nonce: 'insufficient-1' }), 403, 'op_token_insufficient_signers'],
    ];
    for (const [what, token, status, code] of cases) {
      const res = await load(token);
      expect([what, res.status, res.json.error.code, res.json.error.param]).toEqual([what, status, code, 'verifiedOpToken']);
    }
    const rows = await auditRows(gw, `outcome=refused&limit=${cases.length}`);
    expect(rows.map((r) => r.error_code)).toEqual(cases.map((c) => c[3]).reverse());
    expect(rows[0]).toMatchObject({
      operation: 'model-load',
      model_id: 'gov-model',
      target: { worker_id: workerId },
      signers: ['carol'],
      nonce: 'insufficient-1',
      status: 403,
      workers: [],
    });
    expect(rows[0].admin_identity).toMatch(/^sha256:[0-9a-f]{12}$/);
    expect(worker.count('model_load')).toBe(1); // only the first, valid, token reached the worker
  });

  it('the token binds the target and the load options: a body that differs in any of them (or adds one) is op_token_mismatch, nothing sent', async () => {
    const before = worker.count('model_load');
    const body = { modelId: 'gov-model', workerId, quantization: 'q4_K_M', gpuMemoryBudgetMB: 1000, maxContextLength: 4096 };
    const variants: Array<[string, Record<string, unknown>]> = [
      ['another worker', { ...body, workerId: 'w-other' }],
      ['a pool added', { ...body, pool: 'local' }],
      ['replicas added', { ...body, replicas: 1 }],
      ['another quantization', { ...body, quantization: 'fp16' }],
      ['a bigger memory budget', { ...body, gpuMemoryBudgetMB: 80000 }],
      ['no memory budget', { ...body, gpuMemoryBudgetMB: undefined }],
      ['another context length', { ...body, maxContextLength: 131072 }],
      ['an eviction added', { ...body, evictModel: 'other-model' }],
    ];
    for (const [what, changed] of variants) {
      const res = await gw.call('/v1/models/load', { ...changed, verifiedOpToken: gw.tokenFor('model-load', body) });
      expect([what, res.status, res.json.error.code]).toEqual([what, 403, 'op_token_mismatch']);
    }
    expect(worker.count('model_load')).toBe(before);
    const ok = await gw.call('/v1/models/load', { ...body, verifiedOpToken: gw.tokenFor('model-load', body) });
    expect(ok.status).toBe(202);
    const frame = await worker.next('model_load');
    expect(frame).toMatchObject({ model_id: 'gov-model', quantization: 'q4_K_M', gpu_memory_budget_mb: 1000, max_context_length: 4096 });
    report(worker, frame.task_id, 'completed');
  });

  it('the admin token comes first: none or a wrong one is 401, audited under a fingerprint, never the token itself', async () => {
    const token = sign({ nonce: 'admin-check-1' });
    const none = await fetch(`${gw.url}/v1/models/unload`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ modelId: 'gov-model', verifiedOpToken: token }),
    });
    expect(none.status).toBe(401);
    const wrong = await admin(gw.url, 'POST', '/v1/cache/flush', 'not-the-admin-token', { scope: 'all', verifiedOpToken: token });
    expect([wrong.status, wrong.json.error.code]).toEqual([401, 'unauthorized']);
    const [flushRow] = await auditRows(gw, 'operation=cache-flush&limit=1');
    expect(flushRow).toMatchObject({
      outcome: 'refused',
      status: 401,
      error_code: 'unauthorized',
      admin_identity: expect.stringMatching(/^sha256:[0-9a-f]{12}$/),
    });
    const [unloadRow] = await auditRows(gw, 'operation=model-unload&limit=1');
    expect(unloadRow).toMatchObject({ outcome: 'refused', status: 401, admin_identity: null });
    const everything = JSON.stringify(await auditRows(gw, 'limit=1000'));
    expect(everything).not.toContain(TEST_ADMIN_TOKEN);
    expect(everything).not.toContain('not-the-admin-token');
    expect(everything).not.toContain(token);
    expect((await admin(gw.url, 'GET', '/admin/audit', 'wrong')).status).toBe(401);
  });

  it('GET /admin/audit: newest first, filters, limit and paging; bad parameters are 400', async () => {
    const page = await gw.get('/admin/audit?limit=2');
    expect(page.json.data).toHaveLength(2);
    expect(page.json.data[0].id).toBeGreaterThan(page.json.data[1].id);
    const next = await gw.get(`/admin/audit?limit=2&before=${page.json.next_before}`);
    expect(next.json.data[0].id).toBeLessThan(page.json.data[1].id);
    const accepted = await auditRows(gw, 'operation=model-load&outcome=accepted');
    expect(accepted).toHaveLength(2);
    expect(accepted[1]).toMatchObject({
      status: 202,
      signers: ['alice', 'bob'],
      nonce: 'replayed-nonce-1',
      workers: [workerId],
      task_id: expect.stringMatching(/^load-/),
    });
    expect(await auditRows(gw, 'since=2999-01-01')).toEqual([]);
    expect((await gw.get('/admin/audit?outcome=maybe')).json.error).toMatchObject({ code: 'invalid_request', param: 'outcome' });
  });

  it('a shared-key (HMAC) token is refused when compat is off, even one minted with a key the gateway might have had', async () => {
    const token = mintOpToken(Buffer.from('any-shared-key'), {
      ...claimsOf('model-load', { modelId: 'gov-model', workerId }),
      issuedAt: now(),
      signers: ['alice', 'bob'],
    });
    const res = await load(token);
    expect([res.status, res.json.error.code]).toEqual([401, 'op_token_bad_signature']);
    expect(res.json.error.message).toContain('GOVERNANCE_SHARED_KEY_COMPAT is off');
  });
});

describe('the accepted audit row is written before anything is relayed (fail closed)', () => {
  it('when the audit store cannot write, the operation answers 503 audit_unavailable and the worker receives nothing', async () => {
    const gw = await startLifecycleGateway();
    try {
      const { worker, id } = await lifecycleWorker(gw, ['audited-model']);
      const store = gw.app.get(AuditLog);
      const append = store.append.bind(store);
      let failing = true;
      jest.spyOn(store, 'append').mockImplementation(async (entry) => {
        if (failing && entry.outcome === 'accepted') throw new Error('SQLITE_READONLY: attempt to write a readonly database');
        return append(entry);
      });
      for (const [path, body] of [
        ['/v1/models/load', { modelId: 'fresh-model', workerId: id }],
        ['/v1/models/unload', { modelId: 'audited-model', workerId: id }],
        ['/v1/cache/flush', { scope: 'all', workerId: id }],
      ] as const) {
        const operation = path === '/v1/models/load' ? 'model-load' : path === '/v1/models/unload' ? 'model-unload' : 'cache-flush';
        const res = await gw.call(path, { ...body, verifiedOpToken: gw.tokenFor(operation, body) });
        expect([path, res.status, res.json.error.code]).toEqual([path, 503, 'audit_unavailable']);
      }
      // The model the unload would have drained still serves, and the target is free again.
      expect((await gw.get(`/admin/workers/${id}`)).json.models).toContain('audited-model');
      failing = false;
      const body = { modelId: 'fresh-model', workerId: id };
      const res = await gw.call('/v1/models/load', { ...body, verifiedOpToken: gw.tokenFor('model-load', body) });
      expect(res.status).toBe(202);
      // The first lifecycle frame the worker ever sees is this load's: none of the refused three went out.
      const frame = await worker.next('model_load');
      expect(frame.task_id).toBe(res.json.taskId);
      expect(worker.count('model_unload') + worker.count('cache_flush')).toBe(0);
      expect(worker.count('model_load')).toBe(1);
      const rows = await auditRows(gw, 'limit=10');
      expect(rows.filter((r) => r.outcome === 'accepted').map((r) => r.task_id)).toEqual([res.json.taskId]);
      expect(rows.filter((r) => r.error_code === 'audit_unavailable')).toHaveLength(3);
      worker.close();
    } finally {
      await gw.close();
    }
  });
});

describe('shared-key compat (GOVERNANCE_SHARED_KEY_COMPAT=true): the seed format, single authority', () => {
  let dir: string;
  let keyFile: string;
  const KEY = 'lifecycle-test-hmac-key';
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'sb-compat-'));
    keyFile = join(dir, 'model-api.key');
    writeFileSync(keyFile, `${KEY}\n`, { mode: 0o600 });
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const compatEnv = () => ({
    VERIFIED_OP_TOKEN_KEY_PATH: keyFile,
    GOVERNANCE_SHARED_KEY_COMPAT: 'true',
    GOVERNANCE_SIGNERS: 'alice,bob,carol',
    GOVERNANCE_REQUIRED_SIGNERS: '2',
  });

  it('accepts HMAC tokens (bound like Ed25519 ones) and refuses them without compat at boot', async () => {
    const gw = await startGateway(compatEnv());
    try {
      const { worker, id } = await lifecycleWorker(gw, ['compat-model']);
      const mint = (claims: Partial<OpTokenClaims>) =>
        mintOpToken(Buffer.from(KEY), {
          operation: 'model-unload',
          modelId: 'compat-model',
          workerId: id,
          issuedAt: now(),
          signers: ['alice', 'bob'],
          ...claims,
        });
      const call = (token: string) =>
        admin(gw.url, 'POST', '/v1/models/unload', TEST_ADMIN_TOKEN, { modelId: 'compat-model', workerId: id, verifiedOpToken: token });
      expect((await call(mint({ signers: ['alice', 'alice'] }))).json.error.code).toBe('op_token_duplicate_signers');
      expect((await call(mint({ workerId: undefined }))).json.error.code).toBe('op_token_mismatch');
      const unloading = call(mint({}));
      const frame = await worker.next('model_unload');
      worker.send({ type: 'lifecycle_status', task_id: frame.task_id, status: 'completed' });
      expect((await unloading).status).toBe(200);
      worker.close();
    } finally {
      await gw.close();
    }
    await expect(startGateway({ ...compatEnv(), GOVERNANCE_SHARED_KEY_COMPAT: 'false' })).rejects.toThrow(
      'VERIFIED_OP_TOKEN_KEY_PATH is set but shared-key (HMAC) op tokens are off',
    );
  });

  it('a key file that cannot be read stops the boot, naming it', async () => {
    const env = { ...compatEnv(), VERIFIED_OP_TOKEN_KEY_PATH: '/nonexistent/model-api.key' };
    await expect(startGateway(env)).rejects.toThrow(ConfigError);
    await expect(startGateway(env)).rejects.toThrow('VERIFIED_OP_TOKEN_KEY_PATH "/nonexistent/model-api.key" cannot be read');
  });

  it('warns at boot that the shared key is a single authority, and when the key file is readable by other users', async () => {
    const lines: Array<Record<string, any>> = [];
    const destination = { write: (chunk: string) => void lines.push(JSON.parse(chunk)) };
    const loose = join(dir, 'loose.key');
    writeFileSync(loose, `${KEY}\n`, { mode: 0o644 });
    const gw = await startGateway({ ...compatEnv(), VERIFIED_OP_TOKEN_KEY_PATH: loose, LOG_LEVEL: 'info' }, { logDestination: destination });
    try {
      const warnings = await eventually(() => {
        const w = lines.filter((l) => l.context === 'Governance' && l.level === 'warn');
        return w.length === 2 ? w : undefined;
      });
      expect(warnings!.map((w) => w.msg).join('\n')).toContain('is readable by every user (mode 0644)');
      expect(warnings!.map((w) => w.msg).join('\n')).toContain('a single authority, not M of N');
      expect(lines.find((l) => l.context === 'Governance' && l.level === 'info')!.msg).toBe(
        'model lifecycle enabled: op tokens need 2 of 3 signers (alice, bob, carol)',
      );
      expect(JSON.stringify(lines)).not.toContain(KEY);
    } finally {
      await gw.close();
    }
  });
});

describe('lifecycle disabled or misconfigured', () => {
  it('without signers every lifecycle route answers 403 lifecycle_disabled, and the operations are audited', async () => {
    const gw: TestGateway = await startGateway();
    try {
      for (const [method, path, body] of [
        ['POST', '/v1/models/load', { modelId: 'm', verifiedOpToken: 'x' }],
        ['GET', '/v1/models/load/load-1', undefined],
        ['POST', '/v1/models/unload', { modelId: 'm', verifiedOpToken: 'x' }],
        ['POST', '/v1/cache/flush', { scope: 'all', verifiedOpToken: 'x' }],
      ] as const) {
        const res = await admin(gw.url, method, path, TEST_ADMIN_TOKEN, body);
        expect([path, res.status, res.json.error.code]).toEqual([path, 403, 'lifecycle_disabled']);
      }
      const rows = (await admin(gw.url, 'GET', '/admin/audit', TEST_ADMIN_TOKEN)).json.data;
      expect(rows.map((r: any) => [r.operation, r.outcome, r.error_code])).toEqual([
        ['cache-flush', 'refused', 'lifecycle_disabled'],
        ['model-unload', 'refused', 'lifecycle_disabled'],
        ['model-load', 'refused', 'lifecycle_disabled'],
      ]);
    } finally {
      await gw.close();
    }
  });

  it('a signers file with a bad key stops the boot, naming the signer', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sb-signers-'));
    try {
      const file = join(dir, 'signers.json');
      writeFileSync(file, JSON.stringify({ alice: 'AAAA', bob: 'not a key' }));
      await expect(startGateway({ GOVERNANCE_SIGNERS_FILE: file })).rejects.toThrow(`GOVERNANCE_SIGNERS_FILE "${file}".alice: not an Ed25519 public key`);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

import { ConfigError } from '../../src/config';
import { mintOpToken, OpTokenClaims } from '../../src/governance/op-token';
import { startGateway, TestGateway, TEST_ADMIN_TOKEN } from '../support/gateway';
import { admin, eventually } from '../support/http';
import { ScriptedWorker } from '../support/scripted-worker';
import { auditRows, KEY, lifecycleWorker, LifecycleGateway, startLifecycleGateway } from './support';

const now = () => Math.floor(Date.now() / 1000);

describe('lifecycle governance over HTTP', () => {
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
  const sign = (claims: Partial<OpTokenClaims>, key = KEY) => mintOpToken(Buffer.from(key), { operation: 'model-load', modelId: 'gov-model', issuedAt: now(), signers: ['alice', 'bob'], ...claims });

  it('every verification failure has its own status and code, and is audited with what the token claimed', async () => {
    const replayed = sign({ nonce: 'replayed-nonce-1' });
    expect((await load(replayed)).status).toBe(202);
    const cases: Array<[string, unknown, number, string]> = [
      ['missing', undefined, 401, 'op_token_missing'],
      ['malformed', 'eyJub3QiOiJqc29u', 400, 'op_token_malformed'],
      ['bad signature', sign({}, 'another-key'), 401, 'op_token_bad_signature'],
      ['expired', sign({ issuedAt: now() - 600 }), 401, 'op_token_expired'],
      ['replayed', replayed, 401, 'op_token_replayed'],
      ['mismatch', sign({ modelId: 'another-model' }), 403, 'op_token_mismatch'],
      ['duplicate signers', sign({ signers: ['alice', 'alice'] }), 403, 'op_token_duplicate_signers'],
      ['unknown signer', sign({ signers: ['alice', 'mallory'] }), 403, 'op_token_unknown_signer'],
      ['insufficient signers', sign({ signers: ['carol'], nonce: 'insufficient-1' }), 403, 'op_token_insufficient_signers'],
    ];
    for (const [what, token, status, code] of cases) {
      const res = await load(token);
      expect([what, res.status, res.json.error.code, res.json.error.param]).toEqual([what, status, code, 'verifiedOpToken']);
    }
    const rows = await auditRows(gw, `outcome=refused&limit=${cases.length}`);
    expect(rows.map((r) => r.error_code)).toEqual(cases.map((c) => c[3]).reverse());
    expect(rows[0]).toMatchObject({ operation: 'model-load', model_id: 'gov-model', target: { worker_id: workerId }, signers: ['carol'], nonce: 'insufficient-1', status: 403, workers: [] });
    expect(rows[0].admin_identity).toMatch(/^sha256:[0-9a-f]{12}$/);
    expect(worker.count('model_load')).toBe(1); // only the first, valid, token reached the worker
  });

  it('the admin token comes first: none or a wrong one is 401, audited under a fingerprint, never the token itself', async () => {
    const token = sign({ nonce: 'admin-check-1' });
    const none = await fetch(`${gw.url}/v1/models/unload`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ modelId: 'gov-model', verifiedOpToken: token }) });
    expect(none.status).toBe(401);
    const wrong = await admin(gw.url, 'POST', '/v1/cache/flush', 'not-the-admin-token', { scope: 'all', verifiedOpToken: token });
    expect([wrong.status, wrong.json.error.code]).toEqual([401, 'unauthorized']);
    const [flushRow] = await auditRows(gw, 'operation=cache-flush&limit=1');
    expect(flushRow).toMatchObject({ outcome: 'refused', status: 401, error_code: 'unauthorized', admin_identity: expect.stringMatching(/^sha256:[0-9a-f]{12}$/) });
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
    expect(accepted).toHaveLength(1);
    expect(accepted[0]).toMatchObject({ status: 202, signers: ['alice', 'bob'], nonce: 'replayed-nonce-1', workers: [workerId], task_id: expect.stringMatching(/^load-/) });
    expect(await auditRows(gw, 'since=2999-01-01')).toEqual([]);
    expect((await gw.get('/admin/audit?outcome=maybe')).json.error).toMatchObject({ code: 'invalid_request', param: 'outcome' });
  });
});

describe('lifecycle disabled or misconfigured', () => {
  it('without VERIFIED_OP_TOKEN_KEY_PATH every lifecycle route answers 403 lifecycle_disabled, and the operations are audited', async () => {
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

  it('a key file that cannot be read stops the boot, naming it', async () => {
    await expect(startGateway({ VERIFIED_OP_TOKEN_KEY_PATH: '/nonexistent/model-api.key', GOVERNANCE_SIGNERS: 'alice,bob' })).rejects.toThrow(ConfigError);
    await expect(startGateway({ VERIFIED_OP_TOKEN_KEY_PATH: '/nonexistent/model-api.key', GOVERNANCE_SIGNERS: 'alice,bob' })).rejects.toThrow(
      'VERIFIED_OP_TOKEN_KEY_PATH "/nonexistent/model-api.key" cannot be read',
    );
  });

  it('warns at boot when the key file is readable by other users', async () => {
    const lines: Array<Record<string, any>> = [];
    const destination = { write: (chunk: string) => void lines.push(JSON.parse(chunk)) };
    const gw = await startLifecycleGateway({ LOG_LEVEL: 'info' }, { logDestination: destination, keyFileMode: 0o644 });
    try {
      const warning = await eventually(() => lines.find((l) => l.context === 'Governance' && l.level === 'warn'));
      expect(warning!.msg).toContain('is readable by every user (mode 0644)');
      expect(lines.find((l) => l.context === 'Governance' && l.level === 'info')!.msg).toBe('model lifecycle enabled: op tokens need 2 of 3 signers (alice, bob, carol)');
      expect(JSON.stringify(lines)).not.toContain(KEY);
    } finally {
      await gw.close();
    }
  });
});

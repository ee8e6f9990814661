import { mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startGateway, TestGateway, TEST_ADMIN_TOKEN } from '../support/gateway';
import { admin } from '../support/http';
import { lifecycleWorker } from '../lifecycle/support';
import { BuiltPackage, buildPackage, runNode } from './built-package';

/** `switchboard op-token` as operators run it: the compiled CLI, its tokens fed to a gateway. */
let pkg: BuiltPackage;
let dir: string;

beforeAll(() => {
  pkg = buildPackage();
}, 120000);

afterAll(() => pkg.remove());
beforeEach(() => (dir = mkdtempSync(join(tmpdir(), 'sb-op-token-e2e-'))));
afterEach(() => rmSync(dir, { recursive: true, force: true }));

async function cli(args: string[], opts: { env?: Record<string, string>; stdin?: string } = {}): Promise<{ code: number | null; out: string; err: string }> {
  const r = runNode(pkg.cliJs, ['op-token', ...args], { cwd: dir, ...opts });
  const { code } = await r.exit;
  return { code, out: r.stdout(), err: r.stderr() };
}

describe("switchboard op-token: keygen, create, sign on each signer's machine, verify", () => {
  it('three signers generate keys; a token created once and signed by two of them in turn is accepted by the gateway, once', async () => {
    const lines: string[] = [];
    for (const name of ['alice', 'bob', 'carol']) {
      const r = await cli(['keygen', '--signer', name, '--out', join(dir, `${name}.key`)]);
      expect(r.code).toBe(0);
      expect(statSync(join(dir, `${name}.key`)).mode & 0o777).toBe(0o600);
      expect(r.out).toMatch(new RegExp(`^${name}: [A-Za-z0-9+/]{43}=\\n$`));
      lines.push(r.out);
    }
    const signersFile = join(dir, 'signers.yaml');
    writeFileSync(signersFile, lines.join(''));
    const gw: TestGateway = await startGateway({ GOVERNANCE_SIGNERS_FILE: signersFile, GOVERNANCE_REQUIRED_SIGNERS: '2' });
    try {
      const { worker, id } = await lifecycleWorker(gw, ['cli-model']);
      const created = await cli(['--operation', 'model-unload', '--model', 'cli-model', '--worker', id]);
      expect([created.code, created.err]).toEqual([0, '']);
      const unsigned = created.out.trim();
      expect(unsigned).toMatch(/^[A-Za-z0-9_-]+$/);

      // Unsigned, and with one signature: the gateway refuses; verify says why.
      const call = (token: string) =>
        admin(gw.url, 'POST', '/v1/models/unload', TEST_ADMIN_TOKEN, { modelId: 'cli-model', workerId: id, verifiedOpToken: token });
      const byAlice = await cli(['sign', '--key', join(dir, 'alice.key'), '--signer', 'alice', unsigned]);
      expect(byAlice.code).toBe(0);
      expect(byAlice.err).toContain(`alice signs: model-unload of 'cli-model', workerId "${id}"`);
      const one = await cli(['verify', '--signers-file', signersFile, '--required-signers', '2'], { stdin: byAlice.out });
      expect([one.code, one.out]).toEqual([1, expect.stringContaining('INVALID:    1 valid signature(s), 2 needed')]);

      // bob signs on his machine, the token on stdin.
      const byBob = await cli(['sign', '--key', join(dir, 'bob.key'), '--signer', 'bob'], { stdin: byAlice.out });
      expect(byBob.code).toBe(0);
      const token = byBob.out.trim();
      const verified = await cli(['verify', token], { env: { GOVERNANCE_SIGNERS_FILE: signersFile, GOVERNANCE_REQUIRED_SIGNERS: '2' } });
      expect(verified.code).toBe(0);
      expect(verified.out).toContain(`authorises: model-unload of 'cli-model', workerId "${id}"; nothing else`);
      expect(verified.out).toContain('signed by:  alice, bob');

      const unloading = call(token);
      const frame = await worker.next('model_unload');
      expect(frame.verified_op_token).toBe(token);
      worker.send({ type: 'lifecycle_status', task_id: frame.task_id, status: 'completed' });
      expect((await unloading).status).toBe(200);
      expect((await call(token)).json.error.code).toBe('op_token_replayed');

      // A token signed for this worker does not authorise the same unload on every worker.
      const fresh = (
        await cli(['--operation', 'model-unload', '--model', 'cli-model', '--worker', id, '--key', join(dir, 'carol.key'), '--signer', 'carol'])
      ).out.trim();
      const twice = (await cli(['sign', '--key', join(dir, 'alice.key'), '--signer', 'alice', fresh])).out.trim();
      const everywhere = await admin(gw.url, 'POST', '/v1/models/unload', TEST_ADMIN_TOKEN, { modelId: 'cli-model', verifiedOpToken: twice });
      expect([everywhere.status, everywhere.json.error.code]).toEqual([403, 'op_token_mismatch']);
      worker.close();
    } finally {
      await gw.close();
    }
  });

  it('shared-key compat: --key-file (or $VERIFIED_OP_TOKEN_KEY_PATH) mints the seed format, accepted only by a compat gateway', async () => {
    const keyFile = join(dir, 'model-api.key');
    writeFileSync(keyFile, 'shared-hmac-key\n', { mode: 0o600 });
    const gw = await startGateway({ VERIFIED_OP_TOKEN_KEY_PATH: keyFile, GOVERNANCE_SHARED_KEY_COMPAT: 'true', GOVERNANCE_SIGNERS: 'alice,bob,carol' });
    try {
      const { worker, id } = await lifecycleWorker(gw, ['cli-model-2']);
      const r = await cli(['--operation=cache-flush', '--scope=all', `--worker=${id}`, '--signer=alice', '--signer=bob'], {
        env: { VERIFIED_OP_TOKEN_KEY_PATH: keyFile },
      });
      expect(r.code).toBe(0);
      const flushing = admin(gw.url, 'POST', '/v1/cache/flush', TEST_ADMIN_TOKEN, { scope: 'all', workerId: id, verifiedOpToken: r.out.trim() });
      const frame = await worker.next('cache_flush');
      worker.send({ type: 'lifecycle_status', task_id: frame.task_id, status: 'completed', entries_removed: 3 });
      expect((await flushing).json).toMatchObject({ flushed: true, entriesRemoved: 3 });

      const other = await cli([
        '--operation',
        'cache-flush',
        '--scope',
        'all',
        '--worker',
        id,
        '--signer',
        'alice',
        '--signer',
        'bob',
        '--key-file',
        pkg.mainJs,
      ]);
      expect(other.code).toBe(0);
      const refused = await admin(gw.url, 'POST', '/v1/cache/flush', TEST_ADMIN_TOKEN, { scope: 'all', workerId: id, verifiedOpToken: other.out.trim() });
      expect(refused.json.error.code).toBe('op_token_bad_signature');
      worker.close();
    } finally {
      await gw.close();
    }
  });

  it('usage errors exit 2 with one clear line; an unreadable key file exits 1', async () => {
    const usage = await cli(['--operation', 'model-load']);
    expect(usage.code).toBe(2);
    expect(usage.err).toBe("switchboard op-token: --model is required for model-load\nRun 'switchboard op-token --help' for usage.\n");
    const noKey = await cli(['--operation', 'model-load', '--model', 'm', '--signer', 'alice', '--key-file', '/nonexistent/key']);
    expect(noKey.code).toBe(1);
    expect(noKey.err).toMatch(/^switchboard op-token: key file "\/nonexistent\/key" cannot be read: /);
    expect(noKey.out).toBe('');
    const noSigner = await cli(['sign', '--key', join(dir, 'x.key')], { stdin: 'token' });
    expect(noSigner.code).toBe(2);
    const help = await cli(['--help']);
    expect([help.code, help.out]).toEqual([0, expect.stringContaining('switchboard op-token sign --key <private key file> --signer <name>')]);
  });
});

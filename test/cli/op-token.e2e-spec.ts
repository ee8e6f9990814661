import { lifecycleWorker, startLifecycleGateway } from '../lifecycle/support';
import { BuiltPackage, buildPackage, runNode } from './built-package';

/** `switchboard op-token` as operators run it: the compiled CLI, its token fed to a gateway. */
let pkg: BuiltPackage;

beforeAll(() => {
  pkg = buildPackage();
}, 120000);

afterAll(() => pkg.remove());

describe('switchboard op-token', () => {
  it('prints a token the gateway accepts for exactly that operation, once', async () => {
    const gw = await startLifecycleGateway();
    try {
      const { worker, id } = await lifecycleWorker(gw, ['cli-model']);
      const r = runNode(pkg.cliJs, ['op-token', '--operation', 'model-unload', '--model', 'cli-model', '--signer', 'alice', '--signer', 'carol'], {
        env: { VERIFIED_OP_TOKEN_KEY_PATH: gw.keyFile },
      });
      expect((await r.exit).code).toBe(0);
      expect(r.stderr()).toBe('');
      const token = r.stdout().trim();
      expect(token).toMatch(/^[A-Za-z0-9_-]+$/);
      expect(r.stdout().endsWith('\n')).toBe(true);

      const unloading = gw.call('/v1/models/unload', { modelId: 'cli-model', workerId: id, verifiedOpToken: token });
      const frame = await worker.next('model_unload');
      expect(frame.verified_op_token).toBe(token);
      worker.send({ type: 'lifecycle_status', task_id: frame.task_id, status: 'completed' });
      expect((await unloading).status).toBe(200);
      const again = await gw.call('/v1/models/unload', { modelId: 'cli-model', workerId: id, verifiedOpToken: token });
      expect(again.json.error.code).toBe('op_token_replayed');
      worker.close();
    } finally {
      await gw.close();
    }
  });

  it('--key-file wins over the environment; a token from another key is refused by the gateway', async () => {
    const gw = await startLifecycleGateway();
    try {
      const { worker, id } = await lifecycleWorker(gw, ['cli-model-2']);
      const r = runNode(pkg.cliJs, ['op-token', '--operation=cache-flush', '--scope=all', '--signer=alice', '--signer=bob', `--key-file=${gw.keyFile}`], {
        env: { VERIFIED_OP_TOKEN_KEY_PATH: '/nonexistent' },
      });
      expect((await r.exit).code).toBe(0);
      const flushing = gw.call('/v1/cache/flush', { scope: 'all', workerId: id, verifiedOpToken: r.stdout().trim() });
      const frame = await worker.next('cache_flush');
      worker.send({ type: 'lifecycle_status', task_id: frame.task_id, status: 'completed', entries_removed: 3 });
      expect((await flushing).json).toMatchObject({ flushed: true, entriesRemoved: 3 });

      const other = runNode(pkg.cliJs, ['op-token', '--operation', 'cache-flush', '--scope', 'all', '--signer', 'alice', '--signer', 'bob', '--key-file', pkg.mainJs]);
      expect((await other.exit).code).toBe(0);
      const refused = await gw.call('/v1/cache/flush', { scope: 'all', workerId: id, verifiedOpToken: other.stdout().trim() });
      expect(refused.json.error.code).toBe('op_token_bad_signature');
      worker.close();
    } finally {
      await gw.close();
    }
  });

  it('usage errors exit 2 with one clear line; an unreadable key file exits 1', async () => {
    const usage = runNode(pkg.cliJs, ['op-token', '--operation', 'model-load', '--signer', 'alice', '--key-file', '/k']);
    expect((await usage.exit).code).toBe(2);
    expect(usage.stderr()).toBe("switchboard op-token: --model is required for model-load\nRun 'switchboard op-token --help' for usage.\n");
    const noKey = runNode(pkg.cliJs, ['op-token', '--operation', 'model-load', '--model', 'm', '--signer', 'alice', '--key-file', '/nonexistent/key']);
    expect((await noKey.exit).code).toBe(1);
    expect(noKey.stderr()).toMatch(/^switchboard op-token: key file "\/nonexistent\/key" cannot be read: /);
    expect(noKey.stdout()).toBe('');
  });
});

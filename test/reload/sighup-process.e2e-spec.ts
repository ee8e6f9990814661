import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { eventually } from '../support/http';
import { BuiltPackage, buildPackage, freePort, runNode } from '../cli/built-package';
import { ConfigFile, loadConfigProblems } from './support';

/** A real SIGHUP to the compiled gateway in its own process. */
let pkg: BuiltPackage;

beforeAll(() => {
  pkg = buildPackage();
}, 120000);

afterAll(() => pkg.remove());

describe('the gateway process on SIGHUP', () => {
  it('reloads a valid file, refuses an invalid one naming every problem in the log and keeps running, and still exits 0 on SIGTERM', async () => {
    const cwd = mkdtempSync(join(tmpdir(), 'sb-sighup-'));
    const port = await freePort();
    const file = new ConfigFile('providers:\n  - name: local\n    secret: hup-worker-secret\n');
    const env = {
      LISTEN_ADDR: `127.0.0.1:${port}`,
      ADMIN_TOKEN: 'hup-admin-token',
      CONFIG_FILE: file.path,
      DATABASE_URL: `sqlite:${join(cwd, 'sb.db')}`,
      LOG_FORMAT: 'json',
    };
    const url = `http://127.0.0.1:${port}`;
    const providerNames = async () => {
      const res = await fetch(`${url}/admin/providers`, { headers: { authorization: 'Bearer hup-admin-token' } });
      return ((await res.json()) as { data: Array<{ name: string }> }).data.map((p) => p.name);
    };
    const logLines = (r: { stdout: () => string }) =>
      r
        .stdout()
        .split('\n')
        .filter((l) => l.startsWith('{'))
        .map((l) => JSON.parse(l) as { level: string; msg: string; problems?: string[]; changes?: unknown });
    const r = runNode(pkg.mainJs, [], { env, cwd });
    try {
      await eventually(async () => (await fetch(`${url}/health/ready`).catch(() => undefined))?.status === 200, 20000);
      expect(await providerNames()).toEqual(['local']);

      file.write('providers:\n  - name: local\n    secret: hup-worker-secret\n  - name: hup\n    secret: hup-secret-123\n');
      r.child.kill('SIGHUP');
      await eventually(async () => (await providerNames()).includes('hup'), 10000);
      const reloaded = await eventually(() => logLines(r).find((l) => l.msg === 'configuration reloaded (SIGHUP)'));
      expect(reloaded).toMatchObject({ level: 'info', changes: { providers: { added: ['hup'], updated: [], removed: [] } } });

      file.write('providers:\n  - name: local\n    max_queue_len: -1\n  - name: "no good"\nrouting: {strategy: [1]}\nnot_a_setting: 1\n');
      r.child.kill('SIGHUP');
      const refused = (await eventually(() => logLines(r).find((l) => l.msg.startsWith('configuration reload refused')), 10000))!;
      const expected = loadConfigProblems(file.path, env);
      expect(expected.length).toBeGreaterThanOrEqual(4);
      expect(refused.level).toBe('error');
      expect(refused.problems).toEqual(expected);
      for (const p of expected) expect(refused.msg).toContain(p);
      expect(await providerNames()).toEqual(['local', 'hup']);

      r.child.kill('SIGTERM');
      expect(await r.exit).toEqual({ code: 0, signal: null });
    } finally {
      r.child.kill('SIGKILL');
      rmSync(cwd, { recursive: true, force: true });
    }
  });
});

import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { eventually } from '../support/http';
import { BuiltPackage, buildPackage, freePort, ROOT, runNode } from './built-package';

/**
 * The gateway and its CLI as operators run them: the compiled entry points in their own
 * processes, started from an empty directory with the embedded default database.
 */
let pkg: BuiltPackage;
const VERSION = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string }).version;

beforeAll(() => {
  pkg = buildPackage();
}, 120000);

afterAll(() => pkg.remove());

/** A fresh working directory, removed after the test. */
function freshDir(): { cwd: string; remove: () => void } {
  const cwd = mkdtempSync(join(tmpdir(), 'switchboard-fresh-'));
  mkdirSync(cwd, { recursive: true });
  return { cwd, remove: () => rmSync(cwd, { recursive: true, force: true }) };
}

describe('the gateway process', () => {
  it('exits non-zero at boot with a message naming every invalid variable', async () => {
    const r = runNode(pkg.mainJs, [], { env: { MAX_QUEUE_LEN: '-3', HEARTBEAT_TIMEOUT_SECS: 'often', LOG_FORMAT: 'fancy' }, cwd: pkg.dir });
    expect((await r.exit).code).toBe(2);
    expect(r.stderr()).toMatch(/MAX_QUEUE_LEN/);
    expect(r.stderr()).toMatch(/HEARTBEAT_TIMEOUT_SECS/);
    expect(r.stderr()).toContain('LOG_FORMAT must be one of json, pretty, auto, got "fancy"');
    expect(r.stderr().trim().split('\n')).toHaveLength(1);
  });

  it('creates and migrates its SQLite file on first start, turns ready, and exits 0 on SIGTERM', async () => {
    const { cwd, remove } = freshDir();
    const port = await freePort();
    const r = runNode(pkg.mainJs, [], { env: { WORKER_SECRET: 'fresh-secret', LISTEN_ADDR: `127.0.0.1:${port}`, LOG_LEVEL: 'silent' }, cwd });
    try {
      await eventually(async () => (await fetch(`http://127.0.0.1:${port}/health/ready`).catch(() => undefined))?.status === 200, 20000);
      expect(existsSync(join(cwd, 'data', 'switchboard.db'))).toBe(true);
      r.child.kill('SIGTERM');
      expect((await r.exit).code).toBe(0);
    } finally {
      r.child.kill('SIGKILL');
      remove();
    }
  });

  it('logs a one-line boot summary instead of the framework start-up lines (JSON when stdout is not a terminal)', async () => {
    const { cwd, remove } = freshDir();
    const port = await freePort();
    const r = runNode(pkg.mainJs, [], {
      env: { WORKER_SECRET: 'boot-secret', ADMIN_TOKEN: 'boot-admin-token-long-enough-0123', LISTEN_ADDR: `127.0.0.1:${port}`, REQUIRE_API_KEYS: 'true' },
      cwd,
    });
    try {
      const boot = (await eventually(
        () =>
          r
            .stdout()
            .split('\n')
            .find((l) => l.includes('"context":"Boot"')),
        20000,
      ))!;
      const summary = JSON.parse(boot) as Record<string, unknown>;
      expect(summary).toMatchObject({
        level: 'info',
        msg: `switchboard ${VERSION} listening on http://127.0.0.1:${port}`,
        database: 'sqlite',
        database_location: './data/switchboard.db',
        providers: ['local'],
        routing: 'smart',
        api_keys_required: true,
        admin_api: true,
        redis: 'off',
      });
      const lines = r
        .stdout()
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l) as { context?: string; msg: string });
      expect(lines.length).toBeLessThanOrEqual(4);
      for (const l of lines) expect(['NestFactory', 'InstanceLoader', 'RoutesResolver', 'RouterExplorer', 'NestApplication']).not.toContain(l.context);
      expect(r.stdout()).not.toContain('boot-secret');
      expect(r.stdout()).not.toContain('boot-admin-token-long-enough-0123');
      expect(r.stderr()).toBe('');
    } finally {
      r.child.kill('SIGKILL');
      await r.exit;
      remove();
    }
  });

  it('writes human-readable lines with LOG_FORMAT=pretty', async () => {
    const { cwd, remove } = freshDir();
    const port = await freePort();
    const r = runNode(pkg.mainJs, [], { env: { WORKER_SECRET: 's', LISTEN_ADDR: `127.0.0.1:${port}`, LOG_FORMAT: 'pretty' }, cwd });
    try {
      const boot = (await eventually(
        () =>
          r
            .stdout()
            .split('\n')
            .find((l) => l.includes('[Boot]')),
        20000,
      ))!;
      expect(boot).toMatch(
        new RegExp(
          `^\\d\\d:\\d\\d:\\d\\d\\.\\d{3} INFO  \\[Boot\\] switchboard ${VERSION.replace(/\./g, '\\.')} listening on http://127\\.0\\.0\\.1:${port} database=sqlite database_location=\\./data/switchboard\\.db providers=local routing=smart api_keys_required=false admin_api=false redis=off$`,
        ),
      );
      expect(r.stdout()).not.toContain('{"level"');
    } finally {
      r.child.kill('SIGKILL');
      await r.exit;
      remove();
    }
  });

  it('exits 1 with one clear line when the port is already in use', async () => {
    const { cwd, remove } = freshDir();
    const blocker: Server = createServer();
    await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
    const address = blocker.address();
    const port = typeof address === 'object' && address ? address.port : 0;
    try {
      const r = runNode(pkg.mainJs, [], { env: { WORKER_SECRET: 's', LISTEN_ADDR: `127.0.0.1:${port}` }, cwd });
      expect((await r.exit).code).toBe(1);
      expect(r.stderr()).toBe(`switchboard: cannot listen on 127.0.0.1:${port}: address already in use\n`);
      expect(r.stdout()).not.toContain('successfully started');
      expect(r.stdout()).not.toContain('EADDRINUSE');
      expect(r.stdout()).not.toContain('    at ');
    } finally {
      await new Promise((resolve) => blocker.close(resolve));
      remove();
    }
  });
});

describe('the switchboard CLI', () => {
  const COMMANDS = ['serve', 'worker', 'migrate', 'hash-secret', 'op-token'];

  it.each([['--help'], ['-h'], ['help']])('%s lists every command and exits 0', async (flag) => {
    const r = runNode(pkg.cliJs, [flag]);
    expect((await r.exit).code).toBe(0);
    expect(r.stdout()).toMatch(/^Usage: switchboard \[command\] \[options\]/);
    for (const c of COMMANDS) expect(r.stdout()).toMatch(new RegExp(`^  ${c} `, 'm'));
    expect(r.stderr()).toBe('');
  });

  it('--version prints the package version, from the CLI, the gateway and the worker alike', async () => {
    for (const [script, args, expected] of [
      [pkg.cliJs, ['--version'], `switchboard ${VERSION}`],
      [pkg.mainJs, ['--version'], `switchboard ${VERSION}`],
      [pkg.cliJs, ['serve', '--version'], `switchboard ${VERSION}`],
      [pkg.cliJs, ['worker', '--version'], `switchboard worker ${VERSION}`],
      [pkg.workerJs, ['--version'], `switchboard-worker ${VERSION}`],
    ] as const) {
      const r = runNode(script, [...args]);
      expect((await r.exit).code).toBe(0);
      expect(r.stdout()).toBe(`${expected}\n`);
    }
  });

  it.each(COMMANDS)('%s --help explains the command and exits 0 without running it', async (command) => {
    const { cwd, remove } = freshDir();
    try {
      const r = runNode(pkg.cliJs, [command, '--help'], { cwd });
      expect((await r.exit).code).toBe(0);
      expect(r.stdout()).toMatch(new RegExp(`^Usage: (printf .* \\| )?switchboard ${command}\\b`));
      expect(r.stderr()).toBe('');
      const viaHelp = runNode(pkg.cliJs, ['help', command], { cwd });
      expect((await viaHelp.exit).code).toBe(0);
      expect(viaHelp.stdout()).toBe(r.stdout());
      // Nothing started: no database was created.
      expect(existsSync(join(cwd, 'data'))).toBe(false);
    } finally {
      remove();
    }
  });

  it('node dist/main.js --help prints the serve help instead of starting a gateway', async () => {
    const { cwd, remove } = freshDir();
    try {
      const r = runNode(pkg.mainJs, ['--help'], { cwd, env: { LISTEN_ADDR: '127.0.0.1:0' } });
      expect((await r.exit).code).toBe(0);
      expect(r.stdout()).toMatch(/^Usage: switchboard serve/);
      expect(r.stdout()).toContain('LOG_FORMAT');
      expect(existsSync(join(cwd, 'data'))).toBe(false);
    } finally {
      remove();
    }
  });

  it.each([
    [['bogus'], 'switchboard: unknown command "bogus"'],
    [['--bogus'], 'switchboard: unknown option --bogus'],
    [['serve', '--port', '9000'], 'switchboard serve: unknown option --port'],
    [['migrate', '--force'], 'switchboard migrate: unknown option --force'],
    [['hash-secret', 'my-secret'], 'switchboard hash-secret: takes no arguments'],
    [['help', 'bogus'], 'switchboard help: unknown command "bogus"'],
    [['worker', '--bogus'], 'switchboard worker: invalid worker configuration'],
  ])('switchboard %j is a usage error: exit 2, a clear message, no stack', async (args, message) => {
    const r = runNode(pkg.cliJs, args, { stdin: '' });
    expect((await r.exit).code).toBe(2);
    expect(r.stderr()).toContain(message);
    expect(r.stderr()).toMatch(/Run 'switchboard( [a-z-]+)? --help'/);
    expect(r.stderr()).not.toContain('    at ');
    expect(r.stdout()).toBe('');
  });

  it('node dist/main.js with an argument is a usage error too', async () => {
    const r = runNode(pkg.mainJs, ['--port', '9000']);
    expect((await r.exit).code).toBe(2);
    expect(r.stderr()).toBe("switchboard: unknown option --port; settings come from the environment\nRun 'node dist/main.js --help' for usage.\n");
  });

  it('hash-secret prints a scrypt hash of the secret read on stdin, usable as secret_hash', async () => {
    const { verifySecret } = await import('../../src/common/secret-hash');
    const r = runNode(pkg.cliJs, ['hash-secret'], { stdin: 'piped-secret\n' });
    expect((await r.exit).code).toBe(0);
    const hash = r.stdout().trim();
    expect(hash).not.toContain('piped-secret');
    expect(await verifySecret('piped-secret', hash)).toBe(true);
  });

  it('migrate applies the migrations to DATABASE_URL, then says the database is up to date', async () => {
    const { cwd, remove } = freshDir();
    try {
      const env = { DATABASE_URL: `sqlite:${join(cwd, 'm.db')}` };
      const first = runNode(pkg.cliJs, ['migrate'], { env, cwd });
      expect((await first.exit).code).toBe(0);
      expect(first.stdout()).toMatch(/^applied /m);
      const second = runNode(pkg.cliJs, ['migrate'], { env, cwd });
      expect((await second.exit).code).toBe(0);
      expect(second.stdout()).toBe('database is up to date\n');
    } finally {
      remove();
    }
  });
});

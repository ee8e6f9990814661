import { ChildProcess, execFileSync, spawn } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { eventually } from '../support/http';

/**
 * The gateway as operators run it: the compiled entry point in its own process, started from an
 * empty directory with the embedded default database. Compiled into a temp dir laid out like
 * the package (dist/ + package.json), resolving dependencies from this checkout.
 */
const ROOT = join(__dirname, '..', '..');
let pkgDir: string;
let mainJs: string;

beforeAll(() => {
  pkgDir = mkdtempSync(join(tmpdir(), 'switchboard-gw-'));
  const tsc = join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');
  execFileSync(process.execPath, [tsc, '-p', join(ROOT, 'tsconfig.build.json'), '--outDir', join(pkgDir, 'dist')]);
  execFileSync(process.execPath, [tsc, '-p', join(ROOT, 'tsconfig.migrations.json'), '--outDir', join(pkgDir, 'dist')]);
  copyFileSync(join(ROOT, 'package.json'), join(pkgDir, 'package.json'));
  mainJs = join(pkgDir, 'dist', 'main.js');
}, 120000);

afterAll(() => rmSync(pkgDir, { recursive: true, force: true }));

function run(env: Record<string, string>, cwd: string): { child: ChildProcess; exit: Promise<number | null>; stderr: () => string } {
  let stderr = '';
  const child = spawn(process.execPath, [mainJs], {
    cwd,
    env: { PATH: process.env.PATH ?? '', NODE_PATH: join(ROOT, 'node_modules'), ...env },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  child.stderr!.on('data', (d) => (stderr += d));
  const exit = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return { child, exit, stderr: () => stderr };
}

it('exits non-zero at boot with a message naming every invalid variable', async () => {
  const { exit, stderr } = run({ MAX_QUEUE_LEN: '-3', HEARTBEAT_TIMEOUT_SECS: 'often' }, pkgDir);
  expect(await exit).toBe(2);
  expect(stderr()).toMatch(/MAX_QUEUE_LEN/);
  expect(stderr()).toMatch(/HEARTBEAT_TIMEOUT_SECS/);
});

it('creates and migrates its SQLite file on first start, turns ready, and exits 0 on SIGTERM', async () => {
  const cwd = mkdtempSync(join(tmpdir(), 'switchboard-fresh-'));
  mkdirSync(cwd, { recursive: true });
  const port = 20000 + Math.floor(Math.random() * 20000);
  const { child, exit } = run({ WORKER_SECRET: 'fresh-secret', LISTEN_ADDR: `127.0.0.1:${port}`, LOG_LEVEL: 'silent' }, cwd);
  try {
    await eventually(async () => (await fetch(`http://127.0.0.1:${port}/health/ready`).catch(() => undefined))?.status === 200, 20000);
    expect(existsSync(join(cwd, 'data', 'switchboard.db'))).toBe(true);
    child.kill('SIGTERM');
    expect(await exit).toBe(0);
  } finally {
    child.kill('SIGKILL');
    rmSync(cwd, { recursive: true, force: true });
  }
});

it('hash-secret prints a scrypt hash of the secret read on stdin, usable as secret_hash', async () => {
  const { verifySecret } = await import('../../src/auth/secret-hash');
  const child = spawn(process.execPath, [join(pkgDir, 'dist', 'cli.js'), 'hash-secret'], {
    env: { PATH: process.env.PATH ?? '', NODE_PATH: join(ROOT, 'node_modules') },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout!.on('data', (d) => (out += d));
  child.stdin!.end('piped-secret\n');
  const code = await new Promise((resolve) => child.on('exit', resolve));
  expect(code).toBe(0);
  const hash = out.trim();
  expect(hash).not.toContain('piped-secret');
  expect(await verifySecret('piped-secret', hash)).toBe(true);
});

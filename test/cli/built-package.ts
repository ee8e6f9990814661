import { ChildProcess, execFileSync, spawn } from 'node:child_process';
import { copyFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** The checkout's root. */
export const ROOT = join(__dirname, '..', '..');

export interface BuiltPackage {
  /** Laid out like the installed package: dist/ + package.json. */
  dir: string;
  mainJs: string;
  cliJs: string;
  workerJs: string;
  remove(): void;
}

/**
 * Compiles src/ and migrations/ into a temp dir laid out like the package (what `npm run build`
 * produces), resolving dependencies from this checkout through NODE_PATH (see `nodeEnv`).
 */
export function buildPackage(): BuiltPackage {
  const dir = mkdtempSync(join(tmpdir(), 'switchboard-pkg-'));
  const tsc = join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');
  execFileSync(process.execPath, [tsc, '-p', join(ROOT, 'tsconfig.build.json'), '--outDir', join(dir, 'dist')]);
  execFileSync(process.execPath, [tsc, '-p', join(ROOT, 'tsconfig.migrations.json'), '--outDir', join(dir, 'dist')]);
  copyFileSync(join(ROOT, 'package.json'), join(dir, 'package.json'));
  return {
    dir,
    mainJs: join(dir, 'dist', 'main.js'),
    cliJs: join(dir, 'dist', 'cli.js'),
    workerJs: join(dir, 'dist', 'worker', 'main.js'),
    remove: () => rmSync(dir, { recursive: true, force: true }),
  };
}

/** A clean environment for a child: PATH, this checkout's node_modules, and `env`. */
export function nodeEnv(env: Record<string, string> = {}): Record<string, string> {
  return { PATH: process.env.PATH ?? '', NODE_PATH: join(ROOT, 'node_modules'), ...env };
}

export interface NodeRun {
  child: ChildProcess;
  exit: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  stdout: () => string;
  stderr: () => string;
}

/** Runs `node <script> ...args` with stdout and stderr captured; `stdin` is written then closed. */
export function runNode(script: string, args: string[], opts: { env?: Record<string, string>; cwd?: string; stdin?: string } = {}): NodeRun {
  let out = '';
  let err = '';
  const child = spawn(process.execPath, [script, ...args], {
    cwd: opts.cwd ?? tmpdir(),
    env: nodeEnv(opts.env),
    stdio: [opts.stdin === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'],
  });
  child.stdout!.on('data', (d) => (out += d));
  child.stderr!.on('data', (d) => (err += d));
  if (opts.stdin !== undefined) child.stdin!.end(opts.stdin);
  const exit = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => child.on('exit', (code, signal) => resolve({ code, signal })));
  return { child, exit, stdout: () => out, stderr: () => err };
}

/** A loopback port nothing listens on right now. */
export async function freePort(): Promise<number> {
  const { createServer } = await import('node:net');
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

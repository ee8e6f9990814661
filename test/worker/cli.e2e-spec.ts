import { ChildProcess, spawn } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as ts from 'typescript';
import { FakeBackend } from './support/fake-backend';
import { FakeGateway } from './support/fake-gateway';
import { SECRET, requestFrame } from './support/harness';

/**
 * Runs the real CLI as operators do (`switchboard-worker`, i.e. dist/worker/main.js) in a child
 * process. Only src/worker and src/protocol are compiled, into a temp dir laid out like dist/,
 * so the test does not depend on the rest of the tree building.
 */
const ROOT = join(__dirname, '..', '..');
let outDir: string;
let mainJs: string;

function transpileDir(from: string, to: string): void {
  mkdirSync(to, { recursive: true });
  for (const entry of readdirSync(from, { withFileTypes: true })) {
    const name = entry.name;
    if (entry.isDirectory()) {
      transpileDir(join(from, name), join(to, name));
      continue;
    }
    if (!name.endsWith('.ts') || name.endsWith('.spec.ts')) continue;
    const source = readFileSync(join(from, name), 'utf8');
    const { outputText } = ts.transpileModule(source, {
      compilerOptions: { module: ts.ModuleKind.CommonJS, target: ts.ScriptTarget.ES2022, esModuleInterop: true },
      fileName: name,
    });
    writeFileSync(join(to, name.replace(/\.ts$/, '.js')), outputText);
  }
}

beforeAll(() => {
  outDir = mkdtempSync(join(tmpdir(), 'switchboard-worker-cli-'));
  transpileDir(join(ROOT, 'src', 'worker'), join(outDir, 'dist', 'worker'));
  transpileDir(join(ROOT, 'src', 'protocol'), join(outDir, 'dist', 'protocol'));
  copyFileSync(join(ROOT, 'package.json'), join(outDir, 'package.json'));
  mainJs = join(outDir, 'dist', 'worker', 'main.js');
});

afterAll(() => rmSync(outDir, { recursive: true, force: true }));

interface Run {
  child: ChildProcess;
  stdout: () => string;
  stderr: () => string;
  exit: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

function run(args: string[], env: Record<string, string> = {}): Run {
  // NODE_PATH lets the temp build find ws and yaml. (Run through node rather than the shebang so a
  // noexec /tmp cannot break the test; the shebang itself is checked separately.)
  const child = spawn(process.execPath, [mainJs, ...args], {
    env: { PATH: process.env.PATH ?? '', NODE_PATH: join(ROOT, 'node_modules'), ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout!.on('data', (d) => (out += d));
  child.stderr!.on('data', (d) => (err += d));
  const exit = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => child.on('exit', (code, signal) => resolve({ code, signal })));
  return { child, stdout: () => out, stderr: () => err, exit };
}

describe('switchboard-worker CLI', () => {
  it('keeps the node shebang in the built entry point, so the package bin runs as a command', () => {
    expect(readFileSync(join(ROOT, 'src', 'worker', 'main.ts'), 'utf8').startsWith('#!/usr/bin/env node\n')).toBe(true);
    expect(readFileSync(mainJs, 'utf8').startsWith('#!/usr/bin/env node\n')).toBe(true);
  });

  it('--help documents the options and exits 0', async () => {
    const r = run(['--help']);
    expect((await r.exit).code).toBe(0);
    expect(r.stdout()).toMatch(/^Usage: switchboard-worker/);
    for (const flag of ['--proxy-url', '--worker-secret', '--backend-url', '--models', '--capability', '--drain-timeout', '--exit-on-drain']) {
      expect(r.stdout()).toContain(flag);
    }
  });

  it('--version prints the package version', async () => {
    const r = run(['--version']);
    expect((await r.exit).code).toBe(0);
    const { version } = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string };
    expect(r.stdout().trim()).toBe(`switchboard-worker ${version}`);
  });

  it('exits 2 with one message naming every bad value when misconfigured', async () => {
    const r = run(['--max-concurrency', 'lots'], { BACKEND_URL: 'not a url' });
    expect((await r.exit).code).toBe(2);
    expect(r.stderr()).toContain('WORKER_SECRET');
    expect(r.stderr()).toContain('--max-concurrency must be an integer');
    expect(r.stderr()).toContain('BACKEND_URL must be a URL');
    expect(r.stderr()).not.toContain('    at '); // no stack trace
  });

  it('exits 2 (not a crash) when the worker secret holds characters an HTTP header cannot carry', async () => {
    const r = run([], { WORKER_SECRET: 'секрет-ключ', PROXY_URL: 'http://127.0.0.1:9' });
    expect((await r.exit).code).toBe(2);
    expect(r.stderr()).toContain('WORKER_SECRET contains characters that cannot be sent in an HTTP header');
    expect(r.stderr()).not.toContain('секрет');
    expect(r.stderr()).not.toContain('    at ');
  });

  describe('running', () => {
    let gateway: FakeGateway;
    let backend: FakeBackend;
    beforeEach(async () => {
      gateway = new FakeGateway({ secret: SECRET });
      backend = new FakeBackend();
      await Promise.all([gateway.start(), backend.start()]);
    });
    afterEach(async () => {
      await Promise.all([gateway.stop(), backend.close()]);
    });

    it('serves requests configured by env, then on SIGTERM closes 1000 and exits 0, logging JSON without the secret', async () => {
      const r = run(['--worker-name', 'cli-box'], {
        WORKER_SECRET: SECRET,
        PROXY_URL: `${gateway.url}/`,
        BACKEND_URL: `${backend.url}/v1`,
        MODELS: 'llama3',
        MAX_CONCURRENCY: '2',
      });
      try {
        const conn = await gateway.connection(1);
        expect(await conn.next('register')).toMatchObject({ worker_name: 'cli-box', models: ['llama3'], max_concurrent: 2 });
        const req = requestFrame();
        conn.send(req);
        expect((await conn.final(req.request_id)).status_code).toBe(200);

        r.child.kill('SIGTERM');
        expect((await conn.closed).code).toBe(1000);
        expect(await r.exit).toEqual({ code: 0, signal: null });
      } finally {
        r.child.kill('SIGKILL');
      }
      const lines = r.stderr().trim().split('\n');
      expect(lines.length).toBeGreaterThan(3);
      for (const line of lines) expect(() => JSON.parse(line)).not.toThrow();
      expect(r.stderr()).not.toContain(SECRET);
      expect(r.stdout()).toBe('');
    });
  });
});

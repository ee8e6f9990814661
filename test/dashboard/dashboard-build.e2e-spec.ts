import { ChildProcess, execFileSync, spawn } from 'node:child_process';
import { cpSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { eventually } from '../support/http';

/**
 * `npm run build` produces what the gateway serves: the build script runs in a copy of the
 * checkout (its own dist/, this checkout's node_modules), and `node dist/main.js` from there serves
 * the page and every asset byte for byte as they are in src/dashboard/public.
 */
const ROOT = join(__dirname, '..', '..');
const PUBLIC = join(ROOT, 'src', 'dashboard', 'public');
let dir: string;

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'switchboard-dashboard-build-'));
  for (const f of ['package.json', 'tsconfig.json', 'tsconfig.build.json', 'tsconfig.migrations.json', 'tsconfig.dashboard.json'])
    cpSync(join(ROOT, f), join(dir, f));
  for (const d of ['src', 'migrations']) cpSync(join(ROOT, d), join(dir, d), { recursive: true });
  symlinkSync(join(ROOT, 'node_modules'), join(dir, 'node_modules'), 'dir');
  execFileSync('npm', ['run', 'build'], { cwd: dir, stdio: 'pipe', env: { ...process.env, npm_config_update_notifier: 'false' } });
}, 180_000);

afterAll(() => rmSync(dir, { recursive: true, force: true }));

async function freePort(): Promise<number> {
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

it('npm run build copies the page next to the compiled module; node dist/main.js serves it', async () => {
  const built = join(dir, 'dist', 'dashboard', 'public');
  expect(readdirSync(built).sort()).toEqual(readdirSync(PUBLIC).sort());

  const port = await freePort();
  const child: ChildProcess = spawn(process.execPath, [join(dir, 'dist', 'main.js')], {
    cwd: dir,
    env: { PATH: process.env.PATH ?? '', LISTEN_ADDR: `127.0.0.1:${port}`, WORKER_SECRET: 'build-secret', ADMIN_TOKEN: 'build-token', LOG_LEVEL: 'silent' },
    stdio: 'ignore',
  });
  const exited = new Promise((resolve) => child.on('exit', resolve));
  try {
    const base = `http://127.0.0.1:${port}`;
    await eventually(async () => (await fetch(`${base}/health/live`).catch(() => undefined))?.status === 200, 30_000);
    const page = await fetch(`${base}/dashboard`);
    expect(page.status).toBe(200);
    expect(await page.text()).toBe(readFileSync(join(PUBLIC, 'index.html'), 'utf8'));
    for (const file of readdirSync(PUBLIC).filter((f) => f !== 'index.html')) {
      const res = await fetch(`${base}/dashboard/assets/${file}`);
      expect([file, res.status]).toEqual([file, 200]);
      expect(await res.text()).toBe(readFileSync(join(PUBLIC, file), 'utf8'));
    }
  } finally {
    child.kill('SIGTERM');
    await exited;
  }
}, 60_000);

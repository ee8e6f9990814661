import { ChildProcess, spawn, spawnSync } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { freePort } from '../../rate-limit/support';

/** The repository root: `dist/` is built there. */
export const ROOT = resolve(__dirname, '../../..');

const OUTPUT_LIMIT = 256 * 1024;

function newestMtime(dir: string): number {
  let newest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    newest = Math.max(newest, entry.isDirectory() ? newestMtime(path) : statSync(path).mtimeMs);
  }
  return newest;
}

function mtime(path: string): number {
  try {
    return statSync(path).mtimeMs;
  } catch {
    return 0;
  }
}

/**
 * Real processes run what `npm run build` wrote: the gateway `dist/main.js`, the worker daemon
 * `dist/worker/main.js`. Built here (once, about a minute and a half) when either is missing or older
 * than a file under `src/`, so the tests never run stale code.
 */
export function ensureBuilt(): void {
  const built = Math.min(mtime(join(ROOT, 'dist/main.js')), mtime(join(ROOT, 'dist/worker/main.js')));
  if (built > newestMtime(join(ROOT, 'src'))) return;
  process.stderr.write('cluster tier: dist/ is missing or older than src/, running npm run build\n');
  const run = spawnSync('npm', ['run', 'build'], { cwd: ROOT, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  if (run.status !== 0) throw new Error(`npm run build failed (${run.status}):\n${run.stdout}\n${run.stderr}`);
}

export interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

/** A Node child running a script of dist/, its stdout and stderr kept (the tail) to print when a test fails. */
export class NodeProcess {
  private child: ChildProcess | undefined;
  private output = '';
  /** Resolves with how the current run ended. */
  exited: Promise<Exit> = Promise.resolve({ code: null, signal: null });

  constructor(
    readonly name: string,
    private readonly script: string,
    private readonly args: () => string[],
    private readonly env: () => Record<string, string>,
  ) {}

  get pid(): number | undefined {
    return this.child?.pid;
  }

  get running(): boolean {
    return this.child !== undefined && this.child.exitCode === null && this.child.signalCode === null;
  }

  spawn(): void {
    if (this.running) throw new Error(`${this.name} is already running`);
    this.note(`--- start ${new Date().toISOString()}`);
    this.stopping = false;
    const child = spawn(process.execPath, [join(ROOT, this.script), ...this.args()], {
      cwd: ROOT,
      env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...this.env() },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    this.child = child;
    child.stdout?.setEncoding('utf8').on('data', (t: string) => this.note(t));
    child.stderr?.setEncoding('utf8').on('data', (t: string) => this.note(t));
    this.exited = new Promise<Exit>((done) =>
      child.once('exit', (code, signal) => {
        this.note(`--- exit code=${code} signal=${signal} ${new Date().toISOString()}`);
        done({ code, signal });
      }),
    );
  }

  /** Sends a signal to the running process (none: nothing). */
  signal(sig: NodeJS.Signals): void {
    if (!this.running) return;
    this.stopping = true;
    this.child!.kill(sig);
  }

  /** A signal was sent to the current run (it may still be draining). */
  stopping = false;

  /** SIGKILL and wait for the exit (a crash: no goodbye to anyone). */
  async kill9(): Promise<Exit> {
    this.signal('SIGKILL');
    return this.exited;
  }

  /** Stops it if it still runs: SIGTERM, and SIGKILL after `ms`. */
  async stop(ms = 15_000): Promise<void> {
    if (!this.running) return;
    // Already signalled (draining): a second SIGTERM would cut the drain short.
    if (!this.stopping) this.signal('SIGTERM');
    const timer = setTimeout(() => this.signal('SIGKILL'), ms);
    await this.exited;
    clearTimeout(timer);
  }

  /** What it wrote so far (the last OUTPUT_LIMIT characters). */
  get log(): string {
    return this.output;
  }

  private note(text: string): void {
    this.output += text.endsWith('\n') ? text : `${text}\n`;
    if (this.output.length > OUTPUT_LIMIT) this.output = this.output.slice(-OUTPUT_LIMIT);
  }
}

export const WORKER_SECRET = 'failover-worker-secret';
export const ADMIN_TOKEN = 'failover-admin-token-0123456789';
export const CLUSTER_SECRET = 'failover-cluster-secret-0123456789abcdef';

/** A gateway replica (`node dist/main.js`) with a fixed id and port: restarted, it is the same replica at the same address. */
export class GatewayProcess extends NodeProcess {
  private constructor(
    readonly id: string,
    readonly port: number,
    env: Record<string, string>,
  ) {
    super(
      id,
      'dist/main.js',
      () => [],
      () => env,
    );
  }

  static async create(id: string, env: Record<string, string>): Promise<GatewayProcess> {
    const port = await freePort();
    return new GatewayProcess(id, port, {
      LISTEN_ADDR: `127.0.0.1:${port}`,
      CLUSTER_REPLICA_ID: id,
      CLUSTER_SECRET,
      CLUSTER_REPLICA_TIMEOUT_SECS: '1.5',
      WORKER_SECRET,
      ADMIN_TOKEN,
      LOG_LEVEL: 'warn',
      LOG_FORMAT: 'json',
      SHUTDOWN_DRAIN_TIMEOUT_SECS: '10',
      // Unready but serving for a moment after SIGTERM: the test balancer checks every 200 ms.
      SHUTDOWN_DELAY_SECS: '1',
      ...env,
    });
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  /** Starts it and resolves once `/health/ready` answers 200; rejects (with its output) if it exits first. */
  async start(ms = 60_000): Promise<void> {
    this.spawn();
    const exited = this.exited.then((e) => {
      throw new Error(`${this.id} exited while starting (${JSON.stringify(e)}):\n${this.log}`);
    });
    const until = Date.now() + ms;
    const ready = (async () => {
      while (Date.now() < until) {
        if ((await readyStatus(this.url)) === 200) return;
        if (!this.running) return;
        await new Promise((r) => setTimeout(r, 100));
      }
      throw new Error(`${this.id} not ready within ${ms} ms:\n${this.log}`);
    })();
    await Promise.race([ready, exited]);
  }
}

/** `/health/ready`'s status, 0 when nothing answers. */
export async function readyStatus(url: string): Promise<number> {
  try {
    const res = await fetch(`${url}/health/ready`, { signal: AbortSignal.timeout(2000) });
    await res.arrayBuffer();
    return res.status;
  } catch {
    return 0;
  }
}

export interface WorkerOptions {
  name: string;
  /** Gateways in the order the daemon tries them (`--proxy-url a,b,c`). */
  gateways: GatewayProcess[];
  backendUrl: string;
  models: string[];
  maxConcurrency: number;
}

/** The real worker daemon (`node dist/worker/main.js`), fast reconnects, no probing. */
export class WorkerProcess extends NodeProcess {
  constructor(readonly options: WorkerOptions) {
    super(
      options.name,
      'dist/worker/main.js',
      () => [
        '--proxy-url',
        options.gateways.map((g) => g.url).join(','),
        '--backend-url',
        options.backendUrl,
        '--models',
        options.models.join(','),
        '--worker-name',
        options.name,
        '--max-concurrency',
        String(options.maxConcurrency),
        '--no-probe',
        '--no-model-lifecycle',
        '--models-poll-interval',
        '0',
        '--reconnect-min',
        '0.1',
        '--reconnect-max',
        '0.5',
        '--drain-timeout',
        '10',
        '--log-level',
        'warn',
      ],
      () => ({ WORKER_SECRET }),
    );
  }
}

/** Every process's output, for a failed test's message. */
export function logsOf(processes: Iterable<NodeProcess>): string {
  return [...processes].map((p) => `===== ${p.name} =====\n${p.log}`).join('\n');
}

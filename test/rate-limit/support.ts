import { ChildProcess, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { createServer } from 'node:net';
import Redis from 'ioredis';
import type { RateLimiterLogger } from '../../src/rate-limit';
import { CLOSE_MS, withDeadline } from '../support/deadline';

/** The shared test Redis (CI starts it on 127.0.0.1:6379, see .ci/run). */
export const SHARED_REDIS_URL = process.env.TEST_REDIS_URL || 'redis://127.0.0.1:6379';

/** A key prefix no other run uses, so suites can share one Redis. */
export function uniquePrefix(): string {
  return `switchboard:test:${randomUUID().slice(0, 8)}:`;
}

/** Deletes every key under `prefix` (they expire anyway; this keeps the shared Redis tidy). */
export async function deleteKeys(url: string, prefix: string): Promise<void> {
  const client = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 1 });
  try {
    await client.connect();
    let cursor = '0';
    do {
      const [next, keys] = await client.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 500);
      if (keys.length > 0) await client.del(...keys);
      cursor = next;
    } while (cursor !== '0');
  } finally {
    client.disconnect();
  }
}

export async function freePort(): Promise<number> {
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

/**
 * A redis-server owned by one test: loopback only, no persistence, on a fixed port so it can be
 * stopped and started again at the same address.
 */
export class TestRedisServer {
  private child: ChildProcess | undefined;

  private constructor(
    readonly port: number,
    private readonly password?: string,
  ) {}

  static async start(options: { password?: string; port?: number } = {}): Promise<TestRedisServer> {
    const server = new TestRedisServer(options.port ?? (await freePort()), options.password);
    await server.start();
    return server;
  }

  /** A URL for this server (with the password, when it has one). */
  get url(): string {
    return `redis://${this.password ? `:${encodeURIComponent(this.password)}@` : ''}127.0.0.1:${this.port}`;
  }

  get running(): boolean {
    return this.child !== undefined;
  }

  /** Starts (again) on the same port; resolves once it accepts connections. */
  async start(): Promise<void> {
    if (this.child) return;
    const args = ['--port', String(this.port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'];
    if (this.password) args.push('--requirepass', this.password);
    const child = spawn('redis-server', args, { stdio: ['ignore', 'pipe', 'pipe'] });
    this.child = child;
    let output = '';
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`redis-server on ${this.port} did not start:\n${output}`)), 10_000);
      const onData = (chunk: Buffer) => {
        output += chunk.toString();
        if (output.includes('Ready to accept connections')) {
          clearTimeout(timer);
          resolve();
        }
      };
      child.stdout?.on('data', onData);
      child.stderr?.on('data', onData);
      child.once('exit', (code) => {
        clearTimeout(timer);
        reject(new Error(`redis-server on ${this.port} exited (${code}):\n${output}`));
      });
      child.once('error', (err) => {
        clearTimeout(timer);
        reject(err);
      });
    }).catch((err) => {
      this.child = undefined;
      throw err;
    });
    child.stdout?.resume();
    child.stderr?.resume();
  }

  /** Kills the server (as a crash would: no goodbye to clients) and waits until it is gone. */
  async stop(): Promise<void> {
    const child = this.child;
    if (!child) return;
    this.child = undefined;
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    child.kill('SIGCONT'); // in case it was paused
    child.kill('SIGKILL');
    await withDeadline(exited, CLOSE_MS, `redis-server on ${this.port} did not exit after SIGKILL`);
  }

  /** Freezes the process: connections stay open but nothing is answered. */
  pause(): void {
    this.child?.kill('SIGSTOP');
  }

  resume(): void {
    this.child?.kill('SIGCONT');
  }
}

export interface LogLine {
  level: 'log' | 'warn';
  message: string;
}

/** A RateLimiterLogger that keeps what it is told. */
export class RecordingLogger implements RateLimiterLogger {
  readonly lines: LogLine[] = [];
  log(message: string): void {
    this.lines.push({ level: 'log', message });
  }
  warn(message: string): void {
    this.lines.push({ level: 'warn', message });
  }
}

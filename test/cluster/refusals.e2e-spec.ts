import { serve } from '../../src/main';

class Exit extends Error {
  constructor(readonly code: number | undefined) {
    super(`process.exit(${code})`);
  }
}

/**
 * `switchboard serve` with `env` as the whole environment: what it writes to stderr and the exit
 * code it asks for (process.exit is intercepted, so the refusal path runs for real in-process).
 */
async function boot(env: Record<string, string>): Promise<{ code: number | undefined; stderr: string }> {
  const saved = process.env;
  process.env = { LISTEN_ADDR: '127.0.0.1:0', LOG_LEVEL: 'silent', ...env };
  let stderr = '';
  const write = jest.spyOn(process.stderr, 'write').mockImplementation((chunk: string | Uint8Array) => {
    stderr += String(chunk);
    return true;
  });
  const exit = jest.spyOn(process, 'exit').mockImplementation((code?: string | number | null) => {
    throw new Exit(code === null || code === undefined ? undefined : Number(code));
  });
  try {
    await serve([]);
    return { code: undefined, stderr };
  } catch (e) {
    if (e instanceof Exit) return { code: e.code, stderr };
    throw e;
  } finally {
    process.env = saved;
    write.mockRestore();
    exit.mockRestore();
  }
}

describe('cluster mode refuses what it cannot run on', () => {
  it('SQLite with CLUSTER_REDIS_URL: refuses to start, exit 2, one line naming the reason', async () => {
    const r = await boot({ CLUSTER_REDIS_URL: 'redis://127.0.0.1:6399', CLUSTER_SECRET: 'x'.repeat(40), DATABASE_URL: 'sqlite::memory:' });
    expect(r.code).toBe(2);
    expect(r.stderr.trim().split('\n')).toEqual([
      'switchboard: invalid configuration: cluster mode (CLUSTER_REDIS_URL) needs PostgreSQL: set DATABASE_URL to a postgres:// URL, SQLite cannot be shared by replicas',
    ]);
  });

  it('cluster mode without CLUSTER_SECRET: refuses, and a short secret is never echoed', async () => {
    const r = await boot({ CLUSTER_REDIS_URL: 'redis://127.0.0.1:6399', CLUSTER_SECRET: 'short-but-secret', DATABASE_URL: 'postgres://db/sb' });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('CLUSTER_SECRET must be at least 32 characters');
    expect(r.stderr).not.toContain('short-but-secret');
  });
});

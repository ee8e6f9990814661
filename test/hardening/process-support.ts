import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BuiltPackage, freePort, NodeRun, runNode } from '../cli/built-package';
import { eventually } from '../support/http';
import { TEST_ADMIN_TOKEN, TEST_SECRET } from '../support/gateway';

/** The compiled gateway (`node dist/main.js`) in its own process, as operators run it. */
export interface GatewayProcess {
  run: NodeRun;
  url: string;
  workerUrl: string;
  /** The SQLite file it writes. */
  dbPath: string;
  /** Kills it if still running and removes its directory. */
  remove(): Promise<void>;
}

export async function startGatewayProcess(pkg: BuiltPackage, env: Record<string, string> = {}): Promise<GatewayProcess> {
  const dir = mkdtempSync(join(tmpdir(), 'switchboard-proc-'));
  const port = await freePort();
  const dbPath = join(dir, 'switchboard.db');
  const run = runNode(pkg.mainJs, [], {
    cwd: dir,
    env: {
      WORKER_SECRET: TEST_SECRET,
      ADMIN_TOKEN: TEST_ADMIN_TOKEN,
      LISTEN_ADDR: `127.0.0.1:${port}`,
      DATABASE_URL: `sqlite:${dbPath}`,
      LOG_FORMAT: 'json',
      LOG_LEVEL: 'warn',
      ...env,
    },
  });
  const url = `http://127.0.0.1:${port}`;
  let exited = false;
  void run.exit.then(() => (exited = true));
  try {
    await eventually(async () => {
      if (exited) throw new Error(`gateway exited at boot:\n${run.stderr()}\n${run.stdout()}`);
      return (await fetch(`${url}/health/ready`).catch(() => undefined))?.status === 200;
    }, 60_000);
  } catch (e) {
    run.child.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
    throw e;
  }
  return {
    run,
    url,
    workerUrl: `ws://127.0.0.1:${port}/v1/worker/connect`,
    dbPath,
    async remove() {
      if (run.child.exitCode === null && run.child.signalCode === null) {
        run.child.kill('SIGKILL');
        await run.exit;
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Log lines (JSON) the process wrote at level error or above. */
export function errorLines(run: NodeRun): string[] {
  return run
    .stdout()
    .split('\n')
    .filter((l) => /"level":"(error|fatal)"/.test(l));
}

import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { WorkerConfigError, helpText, loadWorkerConfig } from './config';
import { WorkerDaemon } from './daemon';
import { createLogger } from './logger';

export interface CliIo {
  stdout: (text: string) => void;
  stderr: (text: string) => void;
  /** Registers signal handlers; returns a function that removes them. */
  onSignals: (handler: (signal: NodeJS.Signals) => void) => () => void;
}

const processIo: CliIo = {
  stdout: (t) => process.stdout.write(t),
  stderr: (t) => process.stderr.write(t),
  onSignals: (handler) => {
    process.on('SIGTERM', handler);
    process.on('SIGINT', handler);
    return () => {
      process.off('SIGTERM', handler);
      process.off('SIGINT', handler);
    };
  },
};

function packageVersion(): string {
  // Same relative path from src/worker (ts) and dist/worker (built).
  try {
    return (JSON.parse(readFileSync(join(__dirname, '..', '..', 'package.json'), 'utf8')) as { version: string }).version;
  } catch {
    return 'unknown';
  }
}

/** Proxy passwords as written in the URL and decoded: neither may reach a log line. */
function proxyPasswords(config: { httpProxy?: string; httpsProxy?: string }): string[] {
  const out: string[] = [];
  for (const p of [config.httpProxy, config.httpsProxy]) {
    if (!p) continue;
    const { password } = new URL(p);
    // The config loader has already checked that the password decodes.
    if (password) out.push(password, decodeURIComponent(password));
  }
  return out;
}

/**
 * Runs the worker until it stops; resolves with the process exit code. `prog` names the program
 * in help, usage errors and --version: `switchboard-worker`, or `switchboard worker` when the
 * daemon is started through the main CLI.
 */
export async function runCli(argv: readonly string[], env: NodeJS.ProcessEnv, io: CliIo = processIo, prog = 'switchboard-worker'): Promise<number> {
  let loaded;
  try {
    loaded = loadWorkerConfig(argv, env);
  } catch (err) {
    if (err instanceof WorkerConfigError) {
      io.stderr(`${prog}: ${err.message}\nRun '${prog} --help' for the list of options.\n`);
      return 2;
    }
    throw err;
  }
  if (loaded.help) {
    io.stdout(helpText().replace(/^Usage: switchboard-worker/, `Usage: ${prog}`));
    return 0;
  }
  if (loaded.version || !loaded.config) {
    io.stdout(`${prog} ${packageVersion()}\n`);
    return 0;
  }
  const config = loaded.config;
  const version = packageVersion();
  const logger = createLogger({
    level: config.logLevel,
    write: io.stderr,
    secrets: [config.workerSecret, config.backendApiKey ?? '', ...proxyPasswords(config)],
    base: { component: 'switchboard-worker', worker_name: config.workerName },
  });
  let daemon: WorkerDaemon;
  try {
    daemon = new WorkerDaemon(config, { logger, userAgent: `switchboard-worker/${version}` });
  } catch (err) {
    if (err instanceof WorkerConfigError) {
      io.stderr(`${prog}: ${err.message}\n`);
      return 2;
    }
    throw err;
  }
  const removeSignals = io.onSignals((signal) => {
    logger.info('signal received', { signal });
    void daemon.stop();
  });
  daemon.start();
  try {
    return await daemon.waitForExit();
  } finally {
    removeSignals();
  }
}

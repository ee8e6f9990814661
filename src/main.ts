#!/usr/bin/env node
import { appVersion } from './observability/app-version';

/** `switchboard serve --help` and `node dist/main.js --help`. */
export const SERVE_HELP = `Usage: switchboard serve [--help] [--version]
       node dist/main.js [--help] [--version]

Starts the gateway: the OpenAI/Anthropic-compatible API on /v1, the worker WebSocket on
/v1/worker/connect, /admin, /health and /metrics, all on LISTEN_ADDR. It applies pending
database migrations first. SIGTERM or SIGINT drains the workers and exits 0 (a second one
writes pending data within SHUTDOWN_FLUSH_TIMEOUT_SECS and exits 1, a third exits at once); SIGHUP
reloads providers, routing and tenants from CONFIG_FILE (like POST /admin/reload).

Configuration comes from environment variables and the YAML file named by CONFIG_FILE
(every setting: docs/configuration.md). The ones most deployments set:
  LISTEN_ADDR    host:port to listen on (default 127.0.0.1:8080)
  WORKER_SECRET  the secret workers of the default provider present
  ADMIN_TOKEN    bearer token for /admin/* (unset: the admin API answers 403)
  DATABASE_URL   sqlite:<path> or postgres://user:pass@host:5432/db
                 (default sqlite:./data/switchboard.db)
  REDIS_URL      redis://host:6379 for rate limits shared by replicas (unset: in memory)
  CONFIG_FILE    YAML file with providers, routing and tenants
  LOG_LEVEL      fatal, error, warn, info, debug, trace or silent (default info)
  LOG_FORMAT     json, pretty or auto (default auto: pretty on a terminal, JSON otherwise)

Options:
  -h, --help     show this help and exit
  --version      print the version and exit

Exit codes: 0 after a drained shutdown, 1 when it cannot start (e.g. the port is in use),
2 for a usage error or an invalid configuration.
`;

/**
 * Runs the gateway with the given arguments (none but --help and --version are accepted).
 * Resolves once it is serving; exit codes for errors go through process.exit.
 */
export async function serve(args: readonly string[], prog = 'switchboard serve', helpCommand = 'switchboard serve'): Promise<void> {
  for (const arg of args) {
    if (arg === '--help' || arg === '-h') {
      process.stdout.write(SERVE_HELP);
      return;
    }
    if (arg === '--version') {
      process.stdout.write(`switchboard ${appVersion()}\n`);
      return;
    }
  }
  if (args.length > 0) {
    const what = args[0].startsWith('-') ? `unknown option ${args[0]}` : `unexpected argument "${args[0]}"`;
    process.stderr.write(`${prog}: ${what}; settings come from the environment\nRun '${helpCommand} --help' for usage.\n`);
    process.exit(2);
  }

  // Loaded after the argument check, so --help and --version do not pay for Nest and TypeORM.
  const { ConfigError, loadConfig } = await import('./config');
  const { resolveLogFormat } = await import('./observability/logger');
  const { envName } = await import('./config/setting');
  const { SERVER_SETTINGS } = await import('./config/sections/server');
  const problems: string[] = [];
  let config;
  try {
    config = loadConfig();
  } catch (e) {
    if (!(e instanceof ConfigError)) throw e;
    problems.push(...e.problems);
  }
  let logFormat: 'json' | 'pretty' = 'json';
  try {
    logFormat = resolveLogFormat(process.env[envName(SERVER_SETTINGS.settings.logFormat, process.env)], process.stdout.isTTY === true);
  } catch (e) {
    problems.push((e as Error).message);
  }
  if (problems.length > 0 || !config) {
    process.stderr.write(`switchboard: invalid configuration: ${problems.join('; ')}\n`);
    process.exit(2);
  }

  const { createApp, ListenError } = await import('./bootstrap');
  let app;
  try {
    app = await createApp(config, { logFormat, logColor: process.stdout.isTTY === true && !process.env.NO_COLOR });
  } catch (e) {
    if (e instanceof ListenError) {
      process.stderr.write(`switchboard: ${e.message}\n`);
      process.exit(1);
    }
    throw e;
  }
  const running = app;

  // Nest's own shutdown hooks re-raise the signal after closing (exit status 143); operators and
  // orchestrators expect a drained gateway to exit 0, so the signals are handled here.
  const { Logger } = await import('@nestjs/common');
  const log = new Logger('Process');
  let closing = false;
  let flushing = false;
  const close = async () => {
    closing = true;
    // SHUTDOWN_DELAY_SECS: unready at once, but everything keeps serving (no module is closed yet)
    // while the load balancer notices; then the drain.
    if (config.shutdownDelayMs > 0) {
      const { LifecycleState } = await import('./observability/lifecycle-state');
      running.get(LifecycleState).beginUnready();
      log.log(`unready: still serving for ${config.shutdownDelayMs} ms (SHUTDOWN_DELAY_SECS), then draining`);
      await new Promise((resolve) => setTimeout(resolve, config.shutdownDelayMs));
    }
    running
      .close()
      .then(() => process.exit(0))
      .catch((e) => {
        process.stderr.write(`switchboard: shutdown failed: ${(e as Error).stack ?? e}\n`);
        process.exit(1);
      });
  };
  const shutdown = (signal: NodeJS.Signals) => {
    if (!closing) return void close();
    // A second signal cuts the drain short, but data clients were already told about (usage rows,
    // job artifact ids, audit rows) is still written first, within SHUTDOWN_FLUSH_TIMEOUT_SECS.
    if (flushing) {
      // A third one: the operator will not wait for the writes either.
      process.stderr.write(`switchboard: ${signal} a third time: exiting now, pending data may be lost\n`);
      process.exit(1);
    }
    flushing = true;
    const timeoutMs = config.shutdownFlushTimeoutMs;
    process.stderr.write(`switchboard: ${signal} again: writing pending data (up to ${timeoutMs / 1000} s), then exiting without waiting for the drain\n`);
    void import('./shutdown-flush')
      .then(({ flushWriteBehind }) => flushWriteBehind(running, timeoutMs))
      .then((outcome) => {
        if (outcome === 'timed_out') process.stderr.write(`switchboard: pending data not fully written within ${timeoutMs / 1000} s\n`);
      })
      .finally(() => process.exit(1));
  };
  process.on('SIGTERM', shutdown);
  process.on('SIGINT', shutdown);
  const { installProcessErrorHandlers } = await import('./process-errors');
  installProcessErrorHandlers(process, {
    log,
    // Stopped for repeated uncaught exceptions: the same drain and flush as SIGTERM, then exit 1.
    stop: () => {
      if (closing) return;
      closing = true;
      running.close().finally(() => process.exit(1));
    },
  });
}

/** Started as a program (`node dist/main.js`), not imported by the CLI or a test. */
if (require.main === module) {
  serve(process.argv.slice(2), 'switchboard', 'node dist/main.js').catch((e) => {
    process.stderr.write(`switchboard: failed to start: ${(e as Error).stack ?? e}\n`);
    process.exit(1);
  });
}

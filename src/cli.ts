#!/usr/bin/env node
import { appVersion } from './observability/app-version';
import { runMigrationsLocked } from './database/migration-lock';

const USAGE_LINE = 'Usage: switchboard [command] [options]';

const USAGE = `${USAGE_LINE}
       switchboard <command> --help

Commands:
  serve          start the gateway (the default when no command is given)
  worker         start a worker daemon that connects a local inference server to a gateway
  migrate        apply pending database migrations to DATABASE_URL, or revert the last one
  hash-secret    read a worker secret on stdin, print its scrypt hash (for secret_hash: in YAML)
  op-token       create, sign (Ed25519) and verify verifiedOpTokens for model lifecycle operations
  help [command] show this help, or a command's

Options:
  -h, --help     show this help and exit
  --version      print the version and exit

Settings come from environment variables and CONFIG_FILE: docs/configuration.md.
Operating the gateway (logs, compose, metrics, alerts): docs/operations.md.
`;

const MIGRATE_HELP = `Usage: switchboard migrate [--revert]

Applies the pending database migrations to DATABASE_URL and prints each one applied (the
gateway also applies them when it starts). With --revert, undoes the most recent one.

Options:
  --revert       undo the most recently applied migration
  -h, --help     show this help and exit

Environment:
  DATABASE_URL   sqlite:<path> or postgres://user:pass@host:5432/db
                 (default sqlite:./data/switchboard.db); CONFIG_FILE's database_url otherwise
`;

const HASH_SECRET_HELP = `Usage: printf %s "$SECRET" | switchboard hash-secret

Reads a worker secret on stdin (one trailing newline is dropped) and prints its scrypt hash,
for a provider's secret_hash: in the YAML config file, so the file holds no plain secret.
The secret is never taken as an argument: arguments are visible to every user in \`ps\`.

Options:
  -h, --help     show this help and exit
`;

const HELP_FLAGS = new Set(['--help', '-h']);

/** A usage error: one line naming the problem and where help is, exit status 2. */
function usageError(prog: string, problem: string, helpCommand = 'switchboard --help'): number {
  process.stderr.write(`${prog}: ${problem}\nRun '${helpCommand}' for usage.\n`);
  return 2;
}

async function migrate(args: string[]): Promise<number> {
  if (args.some((a) => HELP_FLAGS.has(a))) {
    process.stdout.write(MIGRATE_HELP);
    return 0;
  }
  const unknown = args.filter((a) => a !== '--revert');
  if (unknown.length > 0) {
    const what = unknown[0].startsWith('-') ? `unknown option ${unknown[0]}` : `unexpected argument "${unknown[0]}"`;
    return usageError('switchboard migrate', what, 'switchboard migrate --help');
  }
  const { ConfigError, loadConfig } = await import('./config');
  let databaseUrl: string;
  try {
    databaseUrl = loadConfig().databaseUrl;
  } catch (e) {
    if (!(e instanceof ConfigError)) throw e;
    process.stderr.write(`switchboard: ${e.message}\n`);
    return 2;
  }
  // Loaded lazily so `serve` and `worker` do not pay for TypeORM at startup.
  const { createDataSource } = await import('./database/data-source-options');
  const { MigrationExecutor } = await import('typeorm');
  const dataSource = createDataSource(databaseUrl);
  await dataSource.initialize();
  try {
    if (args.includes('--revert')) {
      const executed = await new MigrationExecutor(dataSource).getExecutedMigrations();
      const last = executed.reduce<(typeof executed)[number] | undefined>((a, m) => (!a || m.timestamp > a.timestamp ? m : a), undefined);
      if (!last) {
        process.stdout.write('no migration to revert\n');
      } else {
        await dataSource.undoLastMigration();
        process.stdout.write(`reverted ${last.name}\n`);
      }
    } else {
      // The same lock as a gateway's boot migrations: a manual migrate never races a starting replica.
      const applied = await runMigrationsLocked(dataSource);
      for (const m of applied) process.stdout.write(`applied ${m.name}\n`);
      if (applied.length === 0) process.stdout.write('database is up to date\n');
    }
  } finally {
    await dataSource.destroy();
  }
  return 0;
}

/** The secret comes on stdin, never as an argument (arguments are visible to every user in `ps`). */
async function hashSecretFromStdin(args: string[]): Promise<number> {
  if (args.some((a) => HELP_FLAGS.has(a))) {
    process.stdout.write(HASH_SECRET_HELP);
    return 0;
  }
  if (args.length > 0) {
    const what = args[0].startsWith('-') ? `unknown option ${args[0]}` : 'takes no arguments: pipe the secret on stdin';
    return usageError('switchboard hash-secret', what, 'switchboard hash-secret --help');
  }
  let input = '';
  for await (const chunk of process.stdin) input += chunk;
  const secret = input.replace(/\r?\n$/, '');
  if (secret === '') {
    process.stderr.write('switchboard hash-secret: pipe the secret on stdin, e.g. printf %s "$SECRET" | switchboard hash-secret\n');
    return 2;
  }
  const { hashSecret } = await import('./common/secret-hash');
  process.stdout.write(`${await hashSecret(secret)}\n`);
  return 0;
}

/** `op-token` (create), `op-token keygen|sign|verify` (docs/lifecycle.md); keys are read from files, never arguments. */
async function opToken(args: string[]): Promise<number> {
  const { runOpToken } = await import('./governance/op-token-commands');
  const { readFileSync } = await import('node:fs');
  return runOpToken(args, {
    env: process.env,
    out: (text) => process.stdout.write(text),
    err: (text) => process.stderr.write(text),
    readStdin: () => (process.stdin.isTTY ? '' : readFileSync(0, 'utf8')),
    nowMs: Date.now(),
  });
}

/** Like dist/worker/main.js: exits once the daemon has stopped (its sockets and timers may linger). */
async function worker(args: string[]): Promise<never> {
  const { runCli } = await import('./worker/cli');
  process.exit(await runCli(args, process.env, undefined, 'switchboard worker'));
}

async function help(args: string[]): Promise<number> {
  const [topic, ...extra] = args;
  if (extra.length > 0) return usageError('switchboard help', `unexpected argument "${extra[0]}"`);
  switch (topic) {
    case undefined:
    case 'help':
      process.stdout.write(USAGE);
      return 0;
    case 'serve': {
      const { SERVE_HELP } = await import('./main');
      process.stdout.write(SERVE_HELP);
      return 0;
    }
    case 'worker':
      return worker(['--help']);
    case 'migrate':
      return migrate(['--help']);
    case 'hash-secret':
      return hashSecretFromStdin(['--help']);
    case 'op-token':
      return opToken(['--help']);
    default:
      return usageError('switchboard help', `unknown command "${topic}"`);
  }
}

/** Runs one command; resolves with an exit code, or undefined when the command keeps running (serve, worker). */
async function run(argv: string[]): Promise<number | undefined> {
  const [first, ...rest] = argv;
  if (first === undefined) return serveCommand([]);
  if (HELP_FLAGS.has(first)) return help([]);
  if (first === '--version') {
    process.stdout.write(`switchboard ${appVersion()}\n`);
    return 0;
  }
  if (first.startsWith('-')) return usageError('switchboard', `unknown option ${first}`);
  switch (first) {
    case 'serve':
      return serveCommand(rest);
    case 'worker':
      return worker(rest);
    case 'migrate':
      return migrate(rest);
    case 'hash-secret':
      return hashSecretFromStdin(rest);
    case 'op-token':
      return opToken(rest);
    case 'help':
      return help(rest);
    default:
      return usageError('switchboard', `unknown command "${first}"`);
  }
}

async function serveCommand(args: string[]): Promise<undefined> {
  const { serve } = await import('./main');
  await serve(args);
  return undefined;
}

run(process.argv.slice(2)).then(
  (code) => {
    if (code !== undefined) process.exitCode = code;
  },
  (e: unknown) => {
    process.stderr.write(`switchboard: ${(e as Error).stack ?? String(e)}\n`);
    process.exit(1);
  },
);

#!/usr/bin/env node
import { ConfigError, loadConfig } from './config';

const USAGE = `usage: switchboard [command]

commands:
  serve               start the gateway (default)
  worker [options]    start a worker daemon that dials into a gateway
  migrate [--revert]  apply pending database migrations to DATABASE_URL, or revert the last one
  hash-secret         read a worker secret on stdin, print its scrypt hash (for secret_hash: in YAML)
  help                show this text
`;

async function migrate(args: string[]): Promise<number> {
  const unknown = args.filter((a) => a !== '--revert');
  if (unknown.length > 0) {
    process.stderr.write(`switchboard migrate: unknown option ${unknown[0]}\n${USAGE}`);
    return 2;
  }
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
      const applied = await dataSource.runMigrations();
      for (const m of applied) process.stdout.write(`applied ${m.name}\n`);
      if (applied.length === 0) process.stdout.write('database is up to date\n');
    }
  } finally {
    await dataSource.destroy();
  }
  return 0;
}

/** The secret comes on stdin, never as an argument (arguments are visible to every user in `ps`). */
async function hashSecretFromStdin(): Promise<number> {
  let input = '';
  for await (const chunk of process.stdin) input += chunk;
  const secret = input.replace(/\r?\n$/, '');
  if (secret === '') {
    process.stderr.write('switchboard hash-secret: pipe the secret on stdin, e.g. printf %s "$SECRET" | switchboard hash-secret\n');
    return 2;
  }
  const { hashSecret } = await import('./auth/secret-hash');
  process.stdout.write(`${await hashSecret(secret)}\n`);
  return 0;
}

async function run(argv: string[]): Promise<void> {
  const [command = 'serve', ...rest] = argv;
  switch (command) {
    case 'serve':
      require('./main');
      return;
    case 'worker':
      // The worker daemon reads its own options from process.argv.slice(2).
      process.argv.splice(2, 1);
      require('./worker/main');
      return;
    case 'migrate':
      process.exitCode = await migrate(rest);
      return;
    case 'hash-secret':
      process.exitCode = await hashSecretFromStdin();
      return;
    case 'help':
    case '--help':
    case '-h':
      process.stdout.write(USAGE);
      return;
    default:
      process.stderr.write(`switchboard: unknown command "${command}"\n${USAGE}`);
      process.exitCode = 2;
  }
}

run(process.argv.slice(2)).catch((e: unknown) => {
  process.stderr.write(`switchboard: ${(e as Error).stack ?? String(e)}\n`);
  process.exit(1);
});

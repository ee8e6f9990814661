#!/usr/bin/env node
import { runCli } from './cli';

runCli(process.argv.slice(2), process.env).then(
  (code) => process.exit(code),
  (err: unknown) => {
    process.stderr.write(`switchboard-worker: fatal: ${err instanceof Error ? err.stack : String(err)}\n`);
    process.exit(1);
  },
);

#!/usr/bin/env node
import { ConfigError, loadConfig } from './config';
import { createApp } from './bootstrap';

async function main(): Promise<void> {
  let config;
  try {
    config = loadConfig();
  } catch (e) {
    if (e instanceof ConfigError) {
      process.stderr.write(`switchboard: ${e.message}\n`);
      process.exit(2);
    }
    throw e;
  }
  const app = await createApp(config);
  process.stderr.write(`switchboard: listening on ${await app.getUrl()}\n`);
}

main().catch((e) => {
  process.stderr.write(`switchboard: failed to start: ${(e as Error).stack ?? e}\n`);
  process.exit(1);
});

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

  // Nest's own shutdown hooks re-raise the signal after closing (exit status 143); operators and
  // orchestrators expect a drained gateway to exit 0, so the signals are handled here.
  let closing = false;
  const shutdown = (signal: NodeJS.Signals) => {
    if (closing) {
      process.stderr.write(`switchboard: ${signal} again, exiting without waiting for the drain\n`);
      process.exit(1);
    }
    closing = true;
    app
      .close()
      .then(() => process.exit(0))
      .catch((e) => {
        process.stderr.write(`switchboard: shutdown failed: ${(e as Error).stack ?? e}\n`);
        process.exit(1);
      });
  };
  process.on('SIGTERM', shutdown);
  process.on('SIGINT', shutdown);
}

main().catch((e) => {
  process.stderr.write(`switchboard: failed to start: ${(e as Error).stack ?? e}\n`);
  process.exit(1);
});

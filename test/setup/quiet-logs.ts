/**
 * Jest setup (every test file): Nest's static Logger writes nothing, so the many tests that
 * exercise failure paths (unexpected errors answered as 500, providers without a secret, worker
 * ejections) do not fill `npm test` output with expected error lines and stacks.
 *
 * Only log output is silenced: assertions, thrown errors and unhandled rejections still fail
 * tests and print as usual. Gateways started by tests log through their own AppLogger
 * (LOG_LEVEL=silent in test/support/gateway.ts); a test that wants to look at log lines installs
 * its own logger (Logger.overrideLogger) or spies on Logger.prototype.
 *
 * TEST_LOGS=1 npm test shows the lines again, when they help find out why a test fails.
 */
import { Logger } from '@nestjs/common';

if (!process.env.TEST_LOGS) Logger.overrideLogger(false);

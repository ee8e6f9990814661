/**
 * Black-box contract suite: talks to a running gateway over HTTP/WebSocket only.
 * `npm run build && npm run test:contract` — globalSetup spawns `node dist/main.js` unless
 * SWITCHBOARD_URL names an already running server. See README.md.
 */
const path = require('node:path');

const tsJest = ['ts-jest', { tsconfig: path.join(__dirname, 'tsconfig.json') }];

module.exports = {
  displayName: 'contract',
  rootDir: __dirname,
  testEnvironment: 'node',
  testMatch: ['<rootDir>/**/*.contract.ts'],
  transform: { '^.+\\.ts$': tsJest },
  globalSetup: '<rootDir>/support/global-setup.ts',
  globalTeardown: '<rootDir>/support/global-teardown.ts',
  testTimeout: 30000,
  // Files share one gateway (and some assert on process-wide state such as /v1/models or
  // the auth limiter), so they run one after another.
  maxWorkers: 1,
};

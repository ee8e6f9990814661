/**
 * The cluster tier (`npm run test:cluster`): gateway replicas on a real redis-server (each suite starts
 * its own on a free port) and a fresh schema of a real PostgreSQL (TEST_DATABASE_URL, which the script
 * sets). Its own config so `npm test` (which runs without PostgreSQL) never picks these files up and
 * never has to skip them.
 */
const path = require('node:path');

const rootDir = path.resolve(__dirname, '../..');

module.exports = {
  rootDir,
  testEnvironment: 'node',
  testMatch: ['<rootDir>/test/cluster/**/*.e2e-spec.ts'],
  transform: { '^.+\\.ts$': ['ts-jest', { tsconfig: 'tsconfig.json' }] },
  setupFiles: ['<rootDir>/test/setup/quiet-logs.ts'],
  // Replicas and workers run `node dist/main.js` / `dist/worker/main.js`: built first when stale.
  globalSetup: '<rootDir>/test/cluster/support/global-setup.ts',
  testTimeout: 60000,
};

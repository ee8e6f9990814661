/**
 * The agents tier (`npm run test:agents`): the real Claude Code and Codex CLIs through the gateway.
 * Its own config so the project's `jest.config.js` (unit `src/**\/*.spec.ts`, e2e `test/**\/*.e2e-spec.ts`)
 * never picks these files up: the CLIs are installed on demand into agents/ (scripts/agents-install.mjs).
 * One suite at a time: each agent run is a heavy native process, and the tier shares the machine.
 */
const path = require('node:path');

const rootDir = path.resolve(__dirname, '../..');

module.exports = {
  rootDir,
  testEnvironment: 'node',
  testMatch: ['<rootDir>/test/agents/**/*.agents-spec.ts'],
  transform: { '^.+\\.ts$': ['ts-jest', { tsconfig: 'tsconfig.json' }] },
  setupFiles: ['<rootDir>/test/setup/quiet-logs.ts'],
  testTimeout: 180000,
  maxWorkers: 1,
};

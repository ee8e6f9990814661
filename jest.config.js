/** Test tiers: unit specs next to the code, integration suites under test/ (real ports, real sockets). */
const tsJest = ['ts-jest', { tsconfig: 'tsconfig.json' }];
/** Quiet output: Nest's logger is silent in tests (TEST_LOGS=1 shows it), see the file. */
const setupFiles = ['<rootDir>/test/setup/quiet-logs.ts'];

module.exports = {
  testTimeout: 30000,
  projects: [
    {
      displayName: 'unit',
      testEnvironment: 'node',
      rootDir: __dirname,
      testMatch: ['<rootDir>/src/**/*.spec.ts'],
      transform: { '^.+\\.ts$': tsJest },
      setupFiles,
    },
    {
      displayName: 'e2e',
      testEnvironment: 'node',
      rootDir: __dirname,
      testMatch: ['<rootDir>/test/**/*.e2e-spec.ts'],
      // The cluster tier needs PostgreSQL and runs with its own config (npm run test:cluster).
      testPathIgnorePatterns: ['/node_modules/', '<rootDir>/test/cluster/'],
      transform: { '^.+\\.ts$': tsJest },
      setupFiles,
    },
  ],
};

/** @type {import('jest').Config} */
module.exports = {
  testEnvironment: 'node',
  roots: ['<rootDir>/test'],
  testMatch: ['**/*.test.ts'],
  // test/load runs the real server under saturating load: alone, afterwards (jest.load.config.js),
  // so that it does not starve the other files' tests of CPU.
  testPathIgnorePatterns: ['/node_modules/', '<rootDir>/test/load/'],
  // Type checking is `npm run typecheck` (part of `npm test`); jest only transpiles.
  transform: { '^.+\\.ts$': ['ts-jest', { tsconfig: 'tsconfig.json' }] },
  globalSetup: '<rootDir>/test/support/global-setup.ts',
  globalTeardown: '<rootDir>/test/support/global-teardown.ts',
  testTimeout: 60000,
  maxWorkers: 2,
};

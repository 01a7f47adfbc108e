/** @type {import('jest').Config} */
module.exports = {
  testEnvironment: '<rootDir>/test/support/node-environment.ts', // jest's node environment; see there
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
  // A worker whose heap is above this after a file is replaced by a fresh one (heaps reached 1.1 GB:
  // each file's modules, collected late), which also keeps its exit short (node-environment.ts).
  workerIdleMemoryLimit: '1GB',
};

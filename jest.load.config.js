/** The load tests (test/load): after the rest of the suite, one file at a time. */
// eslint-disable-next-line @typescript-eslint/no-require-imports -- a CommonJS config file
const base = require('./jest.config');

/** @type {import('jest').Config} */
module.exports = {
  ...base,
  roots: ['<rootDir>/test/load'],
  testPathIgnorePatterns: ['/node_modules/'],
  maxWorkers: 1,
};

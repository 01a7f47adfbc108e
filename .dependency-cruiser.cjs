/**
 * The rooms of server/ and what they may import (server/README.md "Code map").
 * `npm run depcruise` (CI: .ci/run) fails on any violation.
 */
/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: 'no-folder-cycle',
      severity: 'error',
      comment: 'No import cycle among the folders of server/ (type-only imports included).',
      scope: 'folder',
      from: { path: '^server/' },
      to: { circular: true },
    },
    {
      name: 'no-module-cycle',
      severity: 'error',
      comment: 'No import cycle among the modules of server/.',
      from: { path: '^server/' },
      to: { circular: true },
    },
    {
      name: 'rest-imports-no-other-transport',
      severity: 'error',
      comment:
        'A transport (REST server/http, GraphQL server/graphql, operator server/operator) imports none of the others.',
      from: { path: '^server/http/' },
      to: { path: '^server/(graphql|operator)/' },
    },
    {
      name: 'graphql-imports-no-other-transport',
      severity: 'error',
      comment:
        'A transport imports none of the others: shared code lives in server/contract (or a room below). ' +
        'One known exception: server/http/caching.ts (sendPublic) is being reworked in parallel ' +
        '(the serving path); it moves to server/web/ once that work has landed.',
      from: { path: '^server/graphql/' },
      to: { path: '^server/(http|operator)/', pathNot: '^server/http/caching[.]ts$' },
    },
    {
      name: 'operator-imports-no-other-transport',
      severity: 'error',
      comment: 'A transport imports none of the others: shared code lives in server/contract (or a room below).',
      from: { path: '^server/operator/' },
      to: { path: '^server/(http|graphql)/' },
    },
    {
      name: 'server-imports-no-bench-or-test',
      severity: 'error',
      comment: 'The server never loads the bench or the tests.',
      from: { path: '^server/' },
      to: { path: '^(bench|test)/' },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    includeOnly: '^(server|bench|test)/',
  },
};

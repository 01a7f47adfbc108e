/**
 * Runs the operator GraphQL server in a plain Node process for the tests that
 * jest's module VM cannot host (ruru, the GraphiQL IDE, is loaded with a
 * dynamic import()). TypeScript is transpiled on the fly; no build needed.
 * Usage: node child-server.js <databaseUrl> <env>; prints {"url": ...} once
 * listening and exits when stdin closes.
 */
const fs = require('node:fs');
const ts = require('typescript');

require.extensions['.ts'] = (module, filename) => {
  const { outputText } = ts.transpileModule(fs.readFileSync(filename, 'utf8'), {
    fileName: filename,
    compilerOptions: { module: ts.ModuleKind.CommonJS, target: ts.ScriptTarget.ES2022, esModuleInterop: true },
  });
  module._compile(outputText, filename);
};

const { startOperatorServer } = require('../../server/operator/server');
const { createLogger } = require('../../server/log');

const [databaseUrl, env] = process.argv.slice(2);
startOperatorServer({
  databaseUrl,
  config: { env, adminHost: '127.0.0.1', adminPort: 0, pgPoolMax: 2 },
  logger: createLogger('silent'),
}).then(
  (server) => {
    process.stdout.write(`${JSON.stringify({ url: server.url, node: process.version })}\n`);
    process.stdin.resume();
    process.stdin.on('end', () => void server.close().then(() => process.exit(0)));
  },
  (err) => {
    process.stderr.write(`${err.stack}\n`);
    process.exit(1);
  },
);

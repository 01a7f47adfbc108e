/**
 * Runs a TypeScript entry point (e.g. server/main.ts) in a plain Node process,
 * transpiled on the fly (no build needed): node run-ts.js <file.ts>.
 * Workers forked by node:cluster run this same script, so they load too.
 */
const fs = require('node:fs');
const path = require('node:path');
const ts = require('typescript');

require.extensions['.ts'] = (module, filename) => {
  const { outputText } = ts.transpileModule(fs.readFileSync(filename, 'utf8'), {
    fileName: filename,
    compilerOptions: { module: ts.ModuleKind.CommonJS, target: ts.ScriptTarget.ES2022, esModuleInterop: true },
  });
  module._compile(outputText, filename);
};

require(path.resolve(process.argv[2]));

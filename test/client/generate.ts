/**
 * scripts/client-generate.ts in a plain Node process, as `node test/hardening/run-ts.js
 * test/client/generate.ts <command>`: jest's module system cannot load the ESM-only dependencies of
 * @graphql-codegen, which Node's own require loads.
 */
import { main } from '../../scripts/client-generate';

// exitCode, not exit(): a large stdout to a pipe is written asynchronously and must be flushed first.
main(process.argv.slice(3)).then(
  (code) => void (process.exitCode = code),
  (err: unknown) => {
    process.stderr.write(`${(err as Error).stack}\n`);
    process.exitCode = 1;
  },
);

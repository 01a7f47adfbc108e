/**
 * Runs a compiled entry point (dist/<entry>.js), building first only when the
 * build is missing or older than a TypeScript source: `npm run admin` answers
 * without a compile per command (tsc runs once after a change).
 * Usage: node scripts/run-built.mjs server/admin/cli [args...] (the module's exported
 * main(args) is called; it resolves to the exit code).
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const [entry, ...args] = process.argv.slice(2);
if (!entry) {
  process.stderr.write('usage: node scripts/run-built.mjs <entry, e.g. server/admin/cli> [args...]\n');
  process.exit(2);
}
const built = path.join(root, 'dist', `${entry}.js`);
const stamp = path.join(root, 'dist', '.tsbuildinfo.build');

function newestSource(dir) {
  let newest = 0;
  for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
    if (e.name === 'node_modules' || e.name.startsWith('.')) continue;
    const p = path.join(dir, e.name);
    if (e.isDirectory()) newest = Math.max(newest, newestSource(p));
    else if (e.name.endsWith('.ts')) newest = Math.max(newest, fs.statSync(p).mtimeMs);
  }
  return newest;
}

const builtAt = fs.existsSync(built) && fs.existsSync(stamp) ? fs.statSync(stamp).mtimeMs : 0;
const sourcesAt = Math.max(
  ...['server', 'db', 'scripts'].map((d) => newestSource(path.join(root, d))),
  fs.statSync(path.join(root, 'tsconfig.json')).mtimeMs,
);
if (sourcesAt > builtAt) {
  process.stderr.write('building (sources changed since the last build)...\n');
  try {
    execFileSync(
      process.execPath,
      [createRequire(import.meta.url).resolve('typescript/bin/tsc'), '-p', 'tsconfig.build.json'],
      {
        cwd: root,
        stdio: ['ignore', 2, 2], // tsc prints its errors on stdout: keep stdout for the command's JSON
      },
    );
  } catch {
    process.stderr.write(
      `${JSON.stringify({ error: 'the build failed (TypeScript errors above); fix them and retry' })}\n`,
    );
    process.exit(1);
  }
  const now = new Date();
  fs.utimesSync(stamp, now, now); // tsc leaves it alone when nothing needed emitting
}
process.argv = [process.argv[0], built, ...args];
// The entry runs itself when it is the main module; loaded from here it is not, so call its main().
const mod = createRequire(import.meta.url)(built);
if (typeof mod.main === 'function') {
  Promise.resolve(mod.main(args)).then((code) => process.exit(typeof code === 'number' ? code : 0));
}

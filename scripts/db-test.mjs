/**
 * `npm run db:test [-- <family> ...] [-- jest options]`: the SQL tests of one function family
 * (test/db/functions/<family>.test.ts), or of all families without a name. A DBA who changed
 * db/migrations/functions/21-bars.sql runs `npm run db:test -- bars`.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const folder = path.join(root, 'test', 'db', 'functions');
const families = fs
  .readdirSync(folder)
  .filter((f) => f.endsWith('.test.ts'))
  .map((f) => f.slice(0, -'.test.ts'.length));

const args = process.argv.slice(2);
const names = args.filter((a) => !a.startsWith('-'));
const unknown = names.filter((n) => !families.includes(n));
if (unknown.length) {
  process.stderr.write(`db:test: no family ${unknown.join(', ')}; families: ${families.join(', ')}\n`);
  process.exit(2);
}
const files = (names.length ? names : families).map((n) => path.join('test', 'db', 'functions', `${n}.test.ts`));
const jest = path.join(root, 'node_modules', 'jest', 'bin', 'jest.js');
const result = spawnSync(process.execPath, [jest, ...args.filter((a) => a.startsWith('-')), ...files], {
  cwd: root,
  stdio: 'inherit',
});
process.exit(result.status ?? 1);

/**
 * The published partner GraphQL schema (server/graphql/schema.graphql):
 *
 *   npm run graphql:schema             writes the served schema's SDL to the file
 *   npm run graphql:breaking [REF]     reports the changes between the file at git REF
 *                                      (default: HEAD~, the last committed copy before
 *                                      this commit) and the served schema, with
 *                                      @graphql-inspector/core; exits 1 on a breaking one
 */
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { diff } from '@graphql-inspector/core';
import { buildSchema } from 'postgraphile/graphql';
import { partnerSdl } from '../server/graphql/endpoint';

export const SCHEMA_FILE = 'server/graphql/schema.graphql';
const root = path.resolve(__dirname, __dirname.includes(`${path.sep}dist${path.sep}`) ? '../..' : '..');

/** The changes from one SDL to another, each with its criticality (BREAKING, DANGEROUS, NON_BREAKING). */
export async function schemaChanges(before: string, after: string): Promise<{ level: string; message: string }[]> {
  const changes = await diff(buildSchema(before), buildSchema(after));
  return changes.map((c) => ({ level: String(c.criticality.level), message: c.message }));
}

async function breaking(ref: string): Promise<number> {
  let before: string;
  try {
    before = execFileSync('git', ['show', `${ref}:${SCHEMA_FILE}`], { cwd: root, encoding: 'utf8', stdio: 'pipe' });
  } catch {
    process.stdout.write(`graphql:breaking: no ${SCHEMA_FILE} at ${ref}; nothing to compare\n`);
    return 0;
  }
  const changes = await schemaChanges(before, partnerSdl());
  const broken = changes.filter((c) => c.level === 'BREAKING');
  for (const c of changes) process.stdout.write(`${c.level}\t${c.message}\n`);
  process.stdout.write(
    `graphql:breaking: ${changes.length} change(s) against ${ref}, ${broken.length} breaking` +
      (broken.length ? ' (the beta may change with notice in the changelog: say so there)\n' : '\n'),
  );
  return broken.length ? 1 : 0;
}

export async function main(args: string[]): Promise<number> {
  const [command, ref] = args;
  if (command === 'write') {
    writeFileSync(path.join(root, SCHEMA_FILE), partnerSdl());
    return 0;
  }
  if (command === 'check') {
    const same = readFileSync(path.join(root, SCHEMA_FILE), 'utf8') === partnerSdl();
    if (!same) process.stderr.write(`${SCHEMA_FILE} differs from the served schema: npm run graphql:schema\n`);
    return same ? 0 : 1;
  }
  if (command === 'breaking') return breaking(ref ?? 'HEAD~');
  process.stderr.write('usage: graphql-schema write | check | breaking [git ref]\n');
  return 2;
}

if (require.main === module) {
  main(process.argv.slice(2)).then(
    (code) => process.exit(code),
    (err: unknown) => {
      process.stderr.write(`${(err as Error).message}\n`);
      process.exit(1);
    },
  );
}

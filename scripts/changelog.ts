/**
 * CHANGELOG.md from docs/changelog.yml (server/http/changelog.ts):
 *
 *   npm run changelog             writes CHANGELOG.md
 *   npm run changelog -- check    exits 1 when the committed CHANGELOG.md differs (a test does the same)
 */
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { projectRoot } from '../server/config';
import { changelogMarkdown, parseChangelog, CHANGELOG_FILE } from '../server/http/changelog';

export const MARKDOWN_FILE = 'CHANGELOG.md';

/** The CHANGELOG.md that docs/changelog.yml gives. */
export function generatedMarkdown(): string {
  return changelogMarkdown(parseChangelog(readFileSync(path.join(projectRoot, CHANGELOG_FILE), 'utf8')));
}

export async function main(args: string[]): Promise<number> {
  const file = path.join(projectRoot, MARKDOWN_FILE);
  const [command = 'write'] = args;
  if (command === 'write') {
    writeFileSync(file, generatedMarkdown());
    process.stdout.write(`changelog: wrote ${MARKDOWN_FILE} from ${CHANGELOG_FILE}\n`);
    return 0;
  }
  if (command === 'check') {
    const same = readFileSync(file, 'utf8') === generatedMarkdown();
    if (!same) process.stderr.write(`${MARKDOWN_FILE} differs from ${CHANGELOG_FILE}: npm run changelog\n`);
    return same ? 0 : 1;
  }
  process.stderr.write('usage: changelog [write | check]\n');
  return 2;
}

/**
 * The committed client (clients/typescript: openapi.json, src/generated/**) is what the served
 * document and the published SDL generate (`npm run client:generate`). A change to an endpoint, a
 * schema or a GraphQL document without regenerating fails here, naming the files.
 */
import { execFile } from 'node:child_process';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { openApiJson } from '../../server/openapi/document';

const root = path.resolve(__dirname, '../..');

/** The generator's output (scripts/client-generate.ts), run in its own Node process. */
async function generate(command: string): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await promisify(execFile)(
      process.execPath,
      [path.join(root, 'test/hardening/run-ts.js'), path.join(__dirname, 'generate.ts'), command],
      { cwd: root, maxBuffer: 64 * 1024 * 1024 },
    );
    return { code: 0, stdout, stderr };
  } catch (e) {
    const err = e as { code: number; stdout: string; stderr: string };
    return { code: err.code, stdout: err.stdout, stderr: err.stderr };
  }
}

describe('the generated TypeScript client', () => {
  let files: Record<string, string>;
  beforeAll(async () => {
    const { code, stdout, stderr } = await generate('json');
    expect([code, stderr]).toEqual([0, '']);
    files = JSON.parse(stdout) as Record<string, string>;
  });

  test('the committed generated files are what the served document generates', () => {
    const generatedDir = 'clients/typescript/src/generated/graphql';
    const committed = [
      'clients/typescript/openapi.json',
      'clients/typescript/src/generated/openapi.ts',
      ...readdirSync(path.join(root, generatedDir)).map((f) => `${generatedDir}/${f}`),
    ];
    expect(Object.keys(files).sort()).toEqual(committed.sort());
    const stale = Object.entries(files)
      .filter(
        ([file, content]) =>
          !existsSync(path.join(root, file)) || readFileSync(path.join(root, file), 'utf8') !== content,
      )
      .map(([file]) => `${file} differs: run npm run client:generate`);
    expect(stale).toEqual([]);
  });

  test('openapi.json is the served document; the types name each of its paths; each GraphQL document is typed', () => {
    expect(JSON.parse(files['clients/typescript/openapi.json']!)).toEqual(JSON.parse(openApiJson));
    const types = files['clients/typescript/src/generated/openapi.ts']!;
    for (const p of Object.keys((JSON.parse(openApiJson) as { paths: object }).paths))
      expect(types).toContain(`"${p}": {`);
    const graphql = files['clients/typescript/src/generated/graphql/graphql.ts']!;
    const documents = readdirSync(path.join(root, 'clients/typescript/graphql'));
    expect(documents).toHaveLength(4);
    for (const name of ['Bar', 'CityEvents', 'Search', 'RateLimit'])
      expect(graphql).toContain(`export const ${name}Document = new TypedDocumentString(`);
  });

  test('`check` exits 0 on the committed files (and names stale ones otherwise)', async () => {
    const { code, stderr } = await generate('check');
    expect([code, stderr]).toEqual([0, '']);
  });
});

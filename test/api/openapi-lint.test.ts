/**
 * The served OpenAPI document lints clean with @redocly/cli and its
 * recommended ruleset: no errors and no warnings.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { E } from '../../server/contract/endpoints';
import { openApiFor, openApiJson } from '../../server/openapi/document';

const run = promisify(execFile);

// The same document with a deprecated endpoint, parameter and field (declared here; none is real).
const since = {
  since: '2026-01-01',
  sunset: '2026-07-01',
  replacement: 'GET cities',
  changelog: '/api/v1/partner/changelog',
};
const deprecated = JSON.stringify(
  openApiFor([
    { endpoint: E.categories, ...since },
    { endpoint: E.cities, parameter: 'q', graphql: 'Query.cities(q)', ...since },
    { endpoint: E.bar, field: 'BarDetail.price_level', ...since },
  ]),
);

test.each([
  ['served', openApiJson],
  ['with deprecations', deprecated],
])(
  'redocly lint (recommended) of the %s document: 0 errors, 0 warnings',
  async (_name, document) => {
    const dir = mkdtempSync(join(tmpdir(), 'openapi-lint-'));
    try {
      const file = join(dir, 'openapi.json');
      writeFileSync(file, document);
      writeFileSync(join(dir, 'redocly.yaml'), 'extends:\n  - recommended\n');
      const cli = require.resolve('@redocly/cli/bin/cli.js');
      const result = await run(process.execPath, [cli, 'lint', file, '--format', 'json'], {
        cwd: dir,
        env: { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true' },
        maxBuffer: 16 * 1024 * 1024,
      }).catch((e: { stdout: string; stderr: string }) => ({ stdout: e.stdout, stderr: e.stderr }));
      const report = JSON.parse(result.stdout) as {
        totals: { errors: number; warnings: number };
        problems: { ruleId: string; message: string; location: { pointer: string }[] }[];
      };
      const problems = report.problems.map((p) => `${p.ruleId}: ${p.message} at ${p.location[0]?.pointer}`);
      expect(problems).toEqual([]);
      expect(report.totals).toMatchObject({ errors: 0, warnings: 0 });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  },
  120_000,
);

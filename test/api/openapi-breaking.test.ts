/**
 * The breaking-change gate (scripts/openapi.ts, `npm run openapi:breaking`): the committed copy of
 * the OpenAPI document is the served one; the gate, with api-smart-diff, fails on each breaking
 * mutation of the served document (a removed response field, a renamed parameter, a new required
 * parameter, and the contract's other cases: a removed enum value, a narrowed type, a removed
 * endpoint) unless a changelog entry records it, and passes on additive changes.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { projectRoot } from '../../server/config';
import { changelogEntries, parseChangelog, type ChangelogEntry } from '../../server/http/changelog';
import { openApiJson } from '../../server/openapi/document';
import { covers, gate, main, servedSnapshot, SNAPSHOT_FILE, unrecorded } from '../../scripts/openapi';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any -- an OpenAPI document
const served = (): Json => JSON.parse(openApiJson) as Json;
const param = (doc: Json, p: string, name: string): Json =>
  (doc.paths[p].get.parameters as Json[]).find((x) => x.name === name)!;
const recording = (...breaking: string[]): ChangelogEntry[] => [
  ...changelogEntries(),
  { date: '2027-06-01', version: '2.0', kind: 'removed', summary: 'test', links: [], breaking },
];

const MUTATIONS: [string, (d: Json) => void, string[]][] = [
  [
    'a response field removed (Category.slug, in every response that has a category)',
    (d) => {
      delete d.components.schemas.Category.properties.slug;
      d.components.schemas.Category.required = ['name'];
    },
    ['components.schemas.Category.properties.slug', 'components.schemas.Category.properties.slug.required'],
  ],
  [
    'a parameter renamed (GET cities q -> prefix)',
    (d) => void (param(d, '/cities', 'q').name = 'prefix'),
    ['GET /cities parameters.q'],
  ],
  [
    'a required parameter added (GET cities country)',
    (d) =>
      void d.paths['/cities'].get.parameters.push({
        name: 'country',
        in: 'query',
        required: true,
        schema: { type: 'string' },
      }),
    ['GET /cities parameters.country'],
  ],
  [
    'an enum value removed (search type=city)',
    (d) => void (param(d, '/search', 'type').schema.enum = ['bar']),
    ['GET /search parameters.type.schema.enum.city'],
  ],
  [
    'a type narrowed (min_rating number -> integer)',
    (d) => void (param(d, '/bars', 'min_rating').schema.type = 'integer'),
    ['GET /bars parameters.min_rating.schema.type'],
  ],
  [
    'an endpoint removed (GET groups)',
    (d) => void delete d.paths['/groups/{state}/{city}'],
    ['GET /groups/{state}/{city}'],
  ],
];

describe('the breaking-change gate', () => {
  test('the committed copy is the served document (npm run openapi:snapshot)', () => {
    expect(readFileSync(path.join(projectRoot, SNAPSHOT_FILE), 'utf8')).toBe(servedSnapshot());
  });

  test.each(MUTATIONS)(
    'fails on %s, passes once the changelog records it',
    (_name, mutate, locations) => {
      const before = served();
      const after = served();
      mutate(after);
      const failed = gate(before, after, changelogEntries());
      expect(failed.passed).toBe(false);
      expect(failed.open.map((c) => c.location)).toEqual(locations);
      const changes = failed.open;
      // recorded in a changelog entry: exactly, or by a place above it
      expect(unrecorded(changes, recording(...locations))).toEqual([]);
      const operation = locations[0]!.startsWith('GET ')
        ? locations[0]!.split(' ').slice(0, 2).join(' ')
        : 'components.schemas.Category';
      expect(unrecorded(changes, recording(operation))).toEqual([]);
      // a record of something else does not
      expect(unrecorded(changes, recording('GET /bars/{id} parameters.x'))).toEqual(changes);
    },
    30_000,
  );

  test('passes on additive changes: an optional parameter, a response field, an endpoint, an enum value', () => {
    const before = served();
    const after = served();
    after.paths['/cities'].get.parameters.push({
      name: 'sort',
      in: 'query',
      required: false,
      schema: { type: 'string' },
    });
    after.components.schemas.Category.properties.icon = { type: 'string' };
    after.paths['/regions'] = structuredClone(after.paths['/categories']);
    after.paths['/regions'].get.operationId = 'listRegions';
    param(after, '/search', 'type').schema.enum.push('event');
    expect(gate(before, after, changelogEntries())).toEqual({ passed: true, open: [] });
  }, 30_000);

  test('the comparison leaves its inputs alone: the same documents compared twice give the same answer', () => {
    const before = served();
    const after = served();
    param(after, '/cities', 'q').name = 'prefix';
    const text = [JSON.stringify(before), JSON.stringify(after)];
    const first = gate(before, after, changelogEntries());
    expect([JSON.stringify(before), JSON.stringify(after)]).toEqual(text);
    expect(gate(before, after, changelogEntries())).toEqual(first);
    expect(gate(served(), after, changelogEntries())).toEqual(first);
    expect(gate(after, after, changelogEntries())).toEqual({ passed: true, open: [] });
  }, 30_000);

  test('covers: by whole segments, never a look-alike prefix', () => {
    expect(covers('GET /cities', 'GET /cities parameters.q')).toBe(true);
    expect(covers('GET /cities parameters.q', 'GET /cities parameters.q')).toBe(true);
    expect(covers('GET /cities parameters.q', 'GET /cities parameters.qq')).toBe(false);
    expect(covers('GET /changelog', 'GET /changelog.atom')).toBe(false);
    expect(covers('components.schemas.Category', 'components.schemas.CategoryCount.properties.slug')).toBe(false);
  });

  test('a changelog entry records breaking changes with breaking: [...]', () => {
    const [entry] = parseChangelog(
      "entries:\n  - date: 2027-06-01\n    version: '2.0'\n    kind: removed\n    summary: x\n    breaking: ['GET /cities parameters.q']\n",
    );
    expect(entry!.breaking).toEqual(['GET /cities parameters.q']);
  });

  const run = async (args: string[]) => {
    const out: string[] = [];
    const spies = [process.stdout, process.stderr].map((stream) =>
      jest.spyOn(stream, 'write').mockImplementation((t) => (out.push(String(t)), true)),
    );
    try {
      return { code: await main(args), out: out.join('') };
    } finally {
      for (const spy of spies) spy.mockRestore();
    }
  };

  test('npm run openapi:breaking passes on this tree', async () => {
    const { code, out } = await run(['breaking']);
    expect(out).toContain('openapi:breaking: committed docs/openapi/partner-v1.json -> served: 0 change(s)');
    expect(code).toBe(0);
  }, 30_000);

  test('npm run openapi:breaking exits 1 when the served document lost what the committed copy has', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'openapi-gate-'));
    try {
      // the committed copy had a parameter the served document no longer declares: a removed parameter
      const committed = served();
      committed.paths['/cities'].get.parameters.push({
        name: 'country',
        in: 'query',
        required: false,
        schema: { type: 'string' },
      });
      const file = path.join(dir, 'partner-v1.json');
      writeFileSync(file, JSON.stringify(committed));
      const { code, out } = await run(['breaking', 'no-such-ref', file]);
      expect(out).toMatch(/^BREAKING\tGET \/cities parameters\.country\t\(remove\)/m);
      expect(out).toContain('1 breaking, 1 not recorded');
      expect(code).toBe(1);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 30_000);
});

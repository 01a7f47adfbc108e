/**
 * The changelog (decisions.md v1.3 "Deprecations and the changelog"): one source
 * (docs/changelog.yml) gives GET changelog (JSON, validated against the OpenAPI document),
 * GET changelog.atom (checked with a maintained feed parser and against RFC 4287's required
 * elements) and CHANGELOG.md (stale copy: this test fails). Public, cached like openapi.json; a
 * bad Accept or a malformed If-None-Match gets the usual JSON errors.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { parseFeed } from '@rowanmanning/feed-parser';
import { XMLParser, XMLValidator } from 'fast-xml-parser';
import request from 'supertest';
import { projectRoot } from '../../server/config';
import {
  changelogAtom,
  changelogEntries,
  entryId,
  KINDS,
  parseChangelog,
  wellFormedIfNoneMatch,
} from '../../server/http/changelog';
import { generatedMarkdown, MARKDOWN_FILE } from '../../scripts/changelog';
import { createTestDatabase, type TestDatabase } from '../support/db';
import { validateResponse } from '../support/openapi';
import { buildApp } from '../support/partner-app';

const P = '/api/v1/partner';
type Entry = { date: string; version: string; kind: string; summary: string; links: string[] };

describe('changelog endpoints', () => {
  let db: TestDatabase;
  let app: ReturnType<typeof buildApp>['app'];

  beforeAll(async () => {
    db = await createTestDatabase();
    app = buildApp(db.partnerPool(), { guard: [] }).app; // no guard at all: the routes are public
  });
  afterAll(async () => {
    await db?.drop();
  });

  const check = (url: string, res: request.Response) =>
    validateResponse('GET', url, {
      status: res.status,
      headers: res.headers as Record<string, string>,
      text: res.text,
    });

  test('GET changelog: no key, JSON entries newest first, the backfilled versions, cached like openapi.json', async () => {
    const res = await request(app).get(`${P}/changelog`).expect(200);
    check(`${P}/changelog`, res);
    expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(res.headers['cache-control']).toBe('public, max-age=3600');
    const entries = (res.body as { entries: Entry[] }).entries;
    expect(entries.map((e) => e.date)).toEqual([...entries.map((e) => e.date)].sort().reverse());
    for (const e of entries) {
      expect(Object.keys(e)).toEqual(['date', 'version', 'kind', 'summary', 'links']);
      expect(KINDS).toContain(e.kind);
    }
    // v1.0, v1.1, v1.2 and the GraphQL beta, on the days the history shows
    const first = (version: string) => entries.filter((e) => e.version === version).map((e) => e.date);
    expect(first('1.0')).toEqual(['2026-11-22']);
    expect(new Set(first('1.1'))).toEqual(new Set(['2026-11-23']));
    expect(new Set(first('1.2'))).toEqual(new Set(['2026-11-24']));
    expect(entries.find((e) => e.version === '1.2 beta')!.summary).toMatch(/^GraphQL endpoint \(beta\)/);
    // the same entries as the source file
    expect(entries).toEqual(
      parseChangelog(readFileSync(path.join(projectRoot, 'docs/changelog.yml'), 'utf8')).map(
        ({ breaking: _b, ...e }) => e,
      ),
    );
    const again = await request(app).get(`${P}/changelog`).set('If-None-Match', res.headers.etag!).expect(304);
    expect(again.text).toBe('');
  });

  test('GET changelog.atom: a valid Atom feed of the same entries', async () => {
    const res = await request(app).get(`${P}/changelog.atom`).set('Host', 'api.example.test').expect(200);
    expect(res.headers['content-type']).toBe('application/atom+xml; charset=utf-8');
    expect(res.headers['cache-control']).toBe('public, max-age=3600');
    const xml = res.text;
    expect(XMLValidator.validate(xml)).toBe(true); // well-formed

    // A maintained feed parser reads it as Atom 1.0 with every entry.
    const feed = parseFeed(xml);
    const entries = changelogEntries();
    expect(feed.meta).toEqual({ type: 'atom', version: '1.0' });
    expect(feed.title).toBe('Partner Bar Data API changelog');
    expect(feed.self).toBe('http://api.example.test/api/v1/partner/changelog.atom');
    expect(feed.updated?.toISOString()).toBe(`${entries[0]!.date}T00:00:00.000Z`);
    expect(feed.items).toHaveLength(entries.length);
    feed.items.forEach((item, i) => {
      const e = entries[i]!;
      expect(item.id).toBe(entryId(e));
      expect(item.title).toContain(`v${e.version} ${e.kind}: `);
      expect(item.content).toBe(e.summary);
      expect(item.updated?.toISOString()).toBe(`${e.date}T00:00:00.000Z`);
      expect(item.categories.map((c) => c.term)).toEqual([e.kind]);
      if (e.links[0])
        expect(item.url).toBe(e.links[0].startsWith('/') ? `http://api.example.test${e.links[0]}` : e.links[0]);
    });

    // RFC 4287's required elements: feed id, title, updated, author (or one per entry); entry id, title, updated.
    const parsed = new XMLParser({
      ignoreAttributes: false,
      isArray: (name) => ['entry', 'link'].includes(name),
    }).parse(xml) as {
      feed: Record<string, unknown> & { entry: Record<string, unknown>[]; '@_xmlns': string };
    };
    expect(parsed.feed['@_xmlns']).toBe('http://www.w3.org/2005/Atom');
    for (const name of ['id', 'title', 'updated', 'author']) expect(parsed.feed[name]).toBeDefined();
    const ids = new Set<string>();
    const rfc3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/;
    expect(String(parsed.feed.updated)).toMatch(rfc3339);
    for (const entry of parsed.feed.entry) {
      for (const name of ['id', 'title', 'updated']) expect(entry[name]).toBeDefined();
      expect(String(entry.updated)).toMatch(rfc3339);
      expect(String(entry.id)).toMatch(/^tag:[a-z0-9.-]+,\d{4}:\S+$/); // an IRI, permanent
      ids.add(String(entry.id));
      const links = (entry.link ?? []) as Record<string, string>[];
      expect(links.filter((l) => l['@_rel'] === 'alternate').length).toBeLessThanOrEqual(1);
    }
    expect(ids.size).toBe(parsed.feed.entry.length); // unique ids

    // a hostile Host is not echoed into the feed
    const odd = await request(app).get(`${P}/changelog.atom`).set('Host', 'a"b<c').expect(200);
    expect(odd.text).toContain('href="http://localhost/api/v1/partner/changelog.atom"');
  });

  test.each([
    ['changelog', 'text/html', 'application/json'],
    ['changelog', 'application/atom+xml', 'application/json'],
    ['changelog.atom', 'application/json', 'application/atom+xml'],
    ['changelog.atom', 'text/html;q=1, application/atom+xml;q=0', 'application/atom+xml'],
  ])('GET %s with Accept: %s is a JSON 406', async (route, accept, type) => {
    const res = await request(app).get(`${P}/${route}`).set('Accept', accept).expect(406);
    check(`${P}/${route}`, res);
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    expect(res.body).toEqual({
      error: `Not acceptable: this resource is served as ${type} only`,
      request_id: res.headers['x-request-id'],
    });
  });

  test.each([['changelog'], ['changelog.atom']])('GET %s: the Accept values that admit it', async (route) => {
    const type = route === 'changelog' ? 'application/json' : 'application/atom+xml';
    for (const accept of ['*/*', 'application/*', type, `text/html, ${type};q=0.5`])
      await request(app).get(`${P}/${route}`).set('Accept', accept).expect(200);
  });

  test.each([['abc'], ['"unterminated'], ['W/abc'], ['"a" "b"'], ['"a", x'], [','], ['"a"b"']])(
    'a malformed If-None-Match (%s) is a JSON 400',
    async (inm) => {
      for (const route of ['changelog', 'changelog.atom']) {
        const res = await request(app).get(`${P}/${route}`).set('If-None-Match', inm).expect(400);
        check(`${P}/${route}`, res);
        expect(res.body).toEqual({
          error: 'header "If-None-Match" must be * or a list of entity tags such as "abc" or W/"abc"',
          request_id: res.headers['x-request-id'],
        });
      }
    },
  );

  test('well-formed If-None-Match values: a stale tag gets the 200, *, W/ and lists are understood', async () => {
    const { headers } = await request(app).get(`${P}/changelog`).expect(200);
    await request(app).get(`${P}/changelog`).set('If-None-Match', '"stale"').expect(200);
    await request(app).get(`${P}/changelog`).set('If-None-Match', '*').expect(304);
    await request(app).get(`${P}/changelog`).set('If-None-Match', `"x", W/${headers.etag!}`).expect(304);
    expect(wellFormedIfNoneMatch('"a",,"b"')).toBe(true); // empty list elements are allowed (RFC 9110 5.6.1)
  });

  test('other methods: JSON 405', async () => {
    const res = await request(app).post(`${P}/changelog`).expect(405);
    expect(res.headers.allow).toBe('GET, HEAD');
    await request(app).head(`${P}/changelog.atom`).expect(200);
  });
});

describe('the changelog source', () => {
  test('CHANGELOG.md is what docs/changelog.yml generates (npm run changelog)', () => {
    expect(readFileSync(path.join(projectRoot, MARKDOWN_FILE), 'utf8')).toBe(generatedMarkdown());
  });

  const entry = (fields: string) =>
    `entries:\n  - date: 2026-11-25\n    version: '1.3'\n    kind: added\n    summary: x\n${fields}`;
  test.each([
    [entry('    kind2: fixed\n'), 'entry 1: unknown field "kind2"'],
    ['entries:\n  - {date: 2026-11-25, version: 1.3, kind: added, summary: x}\n', 'version must be a quoted string'],
    ["entries:\n  - {date: 2026-13-01, version: '1.3', kind: added, summary: x}\n", 'date must be a YYYY-MM-DD day'],
    [
      "entries:\n  - {date: 2026-11-25, version: '1.3', kind: improved, summary: x}\n",
      'kind must be one of added, changed',
    ],
    [entry('    links: [docs/x]\n'), 'links must be a list of absolute http(s) URLs or paths'],
    [entry('    breaking: GET /bars\n'), 'breaking must be a list of strings'],
    ['entries: none\n', 'expected a top-level "entries:" list'],
  ])('a bad source is refused (%#)', (text, message) => {
    expect(() => parseChangelog(text)).toThrow(message);
  });

  test('newest first; entries of one day keep the order of the file', () => {
    const text =
      "entries:\n  - {date: 2026-01-01, version: '1.0', kind: added, summary: a}\n" +
      "  - {date: 2026-02-01, version: '1.1', kind: added, summary: b}\n" +
      "  - {date: 2026-02-01, version: '1.1', kind: fixed, summary: c}\n";
    expect(parseChangelog(text).map((e) => e.summary)).toEqual(['b', 'c', 'a']);
    expect(changelogAtom(parseChangelog(text), 'http://h')).toContain('<updated>2026-02-01T00:00:00Z</updated>');
  });
});

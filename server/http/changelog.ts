/**
 * The changelog (decisions.md v1.3 "Deprecations and the changelog"): ONE source,
 * docs/changelog.yml, gives
 *
 *   GET /api/v1/partner/changelog       {"entries": [{date, version, kind, summary, links}]}, newest first
 *   GET /api/v1/partner/changelog.atom  the same entries as an Atom feed (RFC 4287)
 *   CHANGELOG.md                        written by `npm run changelog` (a test fails when it is stale)
 *
 * Both routes are public (no key, like openapi.json): `Cache-Control: public, max-age=3600`, strong
 * ETags and 304s; an Accept that admits neither their type gets the usual JSON 406, a malformed
 * If-None-Match the usual JSON 400. An entry may record breaking changes of the OpenAPI document
 * (`breaking:`, see scripts/openapi.ts): the breaking-change gate accepts those.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { Router, type Request, type RequestHandler } from 'express';
import { parse } from 'yaml';
import { projectRoot } from '../config';
import { sendPublic } from './caching';
import { publicDocument, type PublicDocument } from '../web/documents';
import { sendError } from '../contract/errors';
import { acceptsType } from './negotiation';
import { PARTNER_PREFIX } from '../contract/identity';

export const CHANGELOG_FILE = 'docs/changelog.yml';
export const CHANGELOG_PATH = `${PARTNER_PREFIX}/changelog`;
export const KINDS = ['added', 'changed', 'deprecated', 'removed', 'fixed'] as const;
export type Kind = (typeof KINDS)[number];

export interface ChangelogEntry {
  date: string;
  version: string;
  kind: Kind;
  summary: string;
  links: string[];
  /** OpenAPI locations of the breaking changes this entry records (scripts/openapi.ts). */
  breaking: string[];
}

const DAY = /^\d{4}-\d{2}-\d{2}$/;
const LINK = /^(https?:\/\/[^\s<>"]+|\/[^\s<>"]*)$/;
const FIELDS = new Set(['date', 'version', 'kind', 'summary', 'links', 'breaking']);

/** Parses and checks the YAML text; throws one error naming every bad entry. Entries come newest first. */
export function parseChangelog(text: string): ChangelogEntry[] {
  const doc = parse(text) as { entries?: unknown } | null;
  if (!doc || !Array.isArray(doc.entries)) throw new Error(`${CHANGELOG_FILE}: expected a top-level "entries:" list`);
  const problems: string[] = [];
  const entries = doc.entries.map((raw: unknown, i): ChangelogEntry => {
    const e = (raw ?? {}) as Record<string, unknown>;
    const bad = (msg: string) => problems.push(`entry ${i + 1}: ${msg}`);
    for (const key of Object.keys(e)) if (!FIELDS.has(key)) bad(`unknown field "${key}"`);
    const date = String(e.date ?? '');
    const ms = Date.parse(`${date}T00:00:00Z`);
    if (!DAY.test(date) || Number.isNaN(ms) || new Date(ms).toISOString().slice(0, 10) !== date)
      bad('date must be a YYYY-MM-DD day');
    if (typeof e.version !== 'string' || !/^\d+\.\d+(\.\d+)?( beta)?$/.test(e.version))
      bad('version must be a quoted string such as "1.2"');
    if (!KINDS.includes(e.kind as Kind)) bad(`kind must be one of ${KINDS.join(', ')}`);
    if (typeof e.summary !== 'string' || !e.summary.trim()) bad('summary is required');
    const list = (name: 'links' | 'breaking', check?: RegExp): string[] => {
      const v = e[name] ?? [];
      if (!Array.isArray(v) || v.some((x) => typeof x !== 'string' || (check && !check.test(x)))) {
        bad(`${name} must be a list of ${check ? 'absolute http(s) URLs or paths starting with /' : 'strings'}`);
        return [];
      }
      return v as string[];
    };
    return {
      date,
      version: String(e.version),
      kind: e.kind as Kind,
      summary: String(e.summary ?? '').trim(),
      links: list('links', LINK),
      breaking: list('breaking'),
    };
  });
  if (problems.length) throw new Error(`${CHANGELOG_FILE}:\n  ${problems.join('\n  ')}`);
  // newest first; entries of one day keep the file's order
  return entries
    .map((e, i) => ({ e, i }))
    .sort((a, b) => (a.e.date === b.e.date ? a.i - b.i : a.e.date < b.e.date ? 1 : -1))
    .map((x) => x.e);
}

/** The entries of docs/changelog.yml (read once). */
let loaded: ChangelogEntry[] | undefined;
export function changelogEntries(): ChangelogEntry[] {
  return (loaded ??= parseChangelog(readFileSync(path.join(projectRoot, CHANGELOG_FILE), 'utf8')));
}

/** The JSON body of GET changelog. */
export function changelogJson(entries: ChangelogEntry[]): string {
  return JSON.stringify({
    entries: entries.map(({ date, version, kind, summary, links }) => ({ date, version, kind, summary, links })),
  });
}

const xml = (s: string) =>
  s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;').replace(/'/g, '&apos;');

/** A permanent id of an entry (Atom's entry id): its day, version, kind and summary. */
export const entryId = (e: ChangelogEntry): string =>
  `tag:partner-bar-data-api,2026:changelog/${e.date}/${createHash('sha256')
    .update(`${e.date}\n${e.version}\n${e.kind}\n${e.summary}`)
    .digest('hex')
    .slice(0, 16)}`;

/** The first sentence of a summary (the Atom entry's title), at most 120 characters. */
function headline(summary: string): string {
  const first = /^(.+?[.!?])(\s|$)/.exec(summary)?.[1] ?? summary;
  return first.length > 120 ? `${first.slice(0, 119)}…` : first;
}

/**
 * The Atom feed (RFC 4287). `base` is the API's origin (relative links and the self link resolve
 * against it); ids are tag URIs, so they do not change with the host name.
 */
export function changelogAtom(entries: ChangelogEntry[], base: string): string {
  const abs = (link: string) => (link.startsWith('/') ? `${base}${link}` : link);
  const updated = `${entries[0]?.date ?? '2026-11-22'}T00:00:00Z`;
  const lines = [
    '<?xml version="1.0" encoding="utf-8"?>',
    '<feed xmlns="http://www.w3.org/2005/Atom">',
    '  <title>Partner Bar Data API changelog</title>',
    '  <subtitle>Additions, changes, deprecations, removals and fixes of the partner API (docs/COMPATIBILITY.md)</subtitle>',
    '  <id>tag:partner-bar-data-api,2026:changelog</id>',
    `  <updated>${updated}</updated>`,
    '  <author><name>Partner Bar Data API</name></author>',
    `  <link rel="self" type="application/atom+xml" href="${xml(abs(`${CHANGELOG_PATH}.atom`))}"/>`,
    `  <link rel="alternate" type="application/json" href="${xml(abs(CHANGELOG_PATH))}"/>`,
  ];
  for (const e of entries) {
    lines.push(
      '  <entry>',
      `    <id>${entryId(e)}</id>`,
      `    <title>${xml(`v${e.version} ${e.kind}: ${headline(e.summary)}`)}</title>`,
      `    <updated>${e.date}T00:00:00Z</updated>`,
      `    <category term="${e.kind}"/>`,
      ...e.links.map((l, i) => `    <link rel="${i === 0 ? 'alternate' : 'related'}" href="${xml(abs(l))}"/>`),
      `    <content type="text">${xml(e.summary)}</content>`,
      '  </entry>',
    );
  }
  lines.push('</feed>', '');
  return lines.join('\n');
}

/** CHANGELOG.md: versions newest first, the entries of each by kind (Keep a Changelog's headings). */
export function changelogMarkdown(entries: ChangelogEntry[]): string {
  const out = [
    '# Changelog',
    '',
    '<!-- Generated from docs/changelog.yml by `npm run changelog`; edit that file, not this one. -->',
    '',
    'Every change of the partner API that a partner can see, newest first. Also served as JSON at',
    '`GET /api/v1/partner/changelog` and as an Atom feed at `GET /api/v1/partner/changelog.atom`.',
    'What counts as breaking, how deprecations are announced and how long things stay supported:',
    '[docs/COMPATIBILITY.md](docs/COMPATIBILITY.md).',
    '',
  ];
  const versions = [...new Set(entries.map((e) => e.version))];
  for (const version of versions) {
    const of = entries.filter((e) => e.version === version);
    const dates = [...new Set(of.map((e) => e.date))].sort();
    const span = dates.length > 1 ? `${dates[0]} – ${dates[dates.length - 1]}` : dates[0];
    out.push(`## ${version} (${span})`, '');
    for (const kind of KINDS) {
      const items = of.filter((e) => e.kind === kind);
      if (!items.length) continue;
      out.push(`### ${kind[0]!.toUpperCase()}${kind.slice(1)}`, '');
      for (const e of items) {
        const link = (l: string) => (l.startsWith('/') ? `\`${l}\`` : `<${l}>`);
        const links = e.links.length ? ` (${e.links.map(link).join(', ')})` : '';
        const breaking = e.breaking.length ? ` Breaking: ${e.breaking.map((b) => `\`${b}\``).join(', ')}.` : '';
        out.push(`- ${e.date}: ${e.summary}${breaking}${links}`);
      }
      out.push('');
    }
  }
  return out.join('\n');
}

/**
 * If-None-Match as RFC 9110 13.1.2 writes it: `*`, or a comma-separated list of entity tags
 * (`"…"` or `W/"…"`, no DQUOTE or control characters inside; empty list elements allowed).
 */
export function wellFormedIfNoneMatch(value: string): boolean {
  const v = value.trim();
  if (v === '*') return true;
  const items = v.split(',').map((s) => s.trim());
  return items.some((s) => s !== '') && items.every((s) => s === '' || /^(W\/)?"[\x21\x23-\x7e\x80-\xff]*"$/.test(s));
}

const ATOM = 'application/atom+xml';

/** The two public routes, mounted before the JSON-only Accept check (the feed is not JSON). */
export function changelogRoutes(entries: ChangelogEntry[] = changelogEntries()): Router {
  const router = Router();
  const json = publicDocument(changelogJson(entries));
  const atoms = new Map<string, PublicDocument>(); // per origin (a handful)
  const checks =
    (type: string): RequestHandler =>
    (req, res, next) => {
      if (!acceptsType(req.get('accept'), type))
        return sendError(res, 406, `Not acceptable: this resource is served as ${type} only`);
      const inm = req.get('if-none-match');
      if (inm !== undefined && !wellFormedIfNoneMatch(inm))
        return sendError(
          res,
          400,
          'header "If-None-Match" must be * or a list of entity tags such as "abc" or W/"abc"',
        );
      next();
    };
  router.get(CHANGELOG_PATH, checks('application/json'), (req, res) =>
    sendPublic(req, res, 'application/json; charset=utf-8', json),
  );
  router.get(`${CHANGELOG_PATH}.atom`, checks(ATOM), (req, res) => {
    const base = origin(req);
    let atom = atoms.get(base);
    if (!atom) {
      atom = publicDocument(changelogAtom(entries, base));
      if (atoms.size < 16) atoms.set(base, atom);
    }
    return sendPublic(req, res, `${ATOM}; charset=utf-8`, atom);
  });
  return router;
}

/** The origin the client used (protocol honours TRUST_PROXY); a Host that is not a host[:port] is not echoed. */
function origin(req: Request): string {
  const host = req.get('host') ?? '';
  return `${req.protocol}://${/^[A-Za-z0-9.-]+(:\d{1,5})?$|^\[[0-9A-Fa-f:.]+\](:\d{1,5})?$/.test(host) ? host : 'localhost'}`;
}

/**
 * The published OpenAPI document's committed copy and the breaking-change gate
 * (decisions.md v1.3 "Deprecations and the changelog"; docs/COMPATIBILITY.md):
 *
 *   npm run openapi:snapshot            writes the served document to docs/openapi/partner-v1.json
 *   npm run openapi:breaking [REF [FILE]]  compares the served document with the committed copy, and with
 *                                       the copy at git REF (default HEAD~, when it has one), and
 *                                       exits 1 on a breaking change that no changelog entry records
 *
 * Changes are classified by api-smart-diff (OpenAPI 3.0/3.1 aware: request vs response direction,
 * $refs followed into every operation that uses them). Its rules leave a replaced `type` keyword
 * unclassified-as-breaking (string -> integer is reported non-breaking), so a changed `type` counts
 * as breaking here too. Each breaking change gets a location that does not depend on array
 * positions or on how often a schema is referenced:
 *
 *   GET /cities parameters.q                          a query parameter (by name)
 *   components.schemas.Category.properties.slug       a schema property, wherever the schema is used
 *   GET /search parameters.type.schema.enum.city       an enum value (by value)
 *
 * A changelog entry records breaking changes with `breaking: [location, ...]`; a location covers
 * every change at or below it (`GET /cities` covers all of that operation's).
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { apiCompare } from 'api-smart-diff';
import { projectRoot } from '../server/config';
import { changelogEntries, type ChangelogEntry } from '../server/http/changelog';
import { openApiJson } from '../server/openapi/document';

export const SNAPSHOT_FILE = 'docs/openapi/partner-v1.json';

type Json = Record<string, unknown>;
type Segment = string | number;

export interface BreakingChange {
  location: string;
  action: string;
  /** api-smart-diff's description of one occurrence. */
  description: string;
}

/** The served document as the snapshot stores it (pretty-printed, a final newline). */
export const servedSnapshot = (): string => `${JSON.stringify(JSON.parse(openApiJson), null, 2)}\n`;

const METHODS = new Set(['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace']);

/** Follows a local $ref: the node it points to and its path. */
function follow(doc: Json, node: unknown, at: Segment[]): { node: unknown; at: Segment[] } {
  let n = node;
  let p = at;
  for (let hops = 0; hops < 32; hops++) {
    const ref = (n as Json | null)?.$ref;
    if (typeof ref !== 'string' || !ref.startsWith('#/')) break;
    p = ref
      .slice(2)
      .split('/')
      .map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'));
    n = p.reduce<unknown>((x, s) => (x as Json | undefined)?.[s], doc);
  }
  return { node: n, at: p };
}

/**
 * The canonical location of a diff path in a document: through every $ref to the component it
 * lands in; array items by their identity (a parameter by its name, an enum or required entry by
 * its value: `required.<name>` becomes `properties.<name>.required`).
 */
export function canonicalLocation(doc: Json, diffPath: Segment[]): string {
  let node: unknown = doc;
  let at: Segment[] = [];
  let skipIndex = false;
  for (const seg of diffPath) {
    ({ node, at } = follow(doc, node, at));
    // api-smart-diff reports some schemas (a $ref with siblings) as `allOf: [..]` that the document
    // does not have: step over that level.
    if (skipIndex && typeof seg === 'number') {
      skipIndex = false;
      continue;
    }
    if (seg === 'allOf' && node && typeof node === 'object' && !Array.isArray(node) && !('allOf' in node)) {
      skipIndex = true;
      continue;
    }
    const parent = node;
    node = (parent as Json | undefined)?.[seg as string];
    const key = at[at.length - 1];
    if (Array.isArray(parent) && typeof seg === 'number') {
      const item = follow(doc, node, []).node as Json | string | undefined;
      if (key === 'parameters' && item && typeof item === 'object') at = [...at, String(item.name)];
      else if (key === 'required' && typeof item === 'string')
        at = [...at.slice(0, -1), 'properties', item, 'required'];
      else if (typeof item === 'string' || typeof item === 'number') at = [...at, String(item)];
      else at = [...at, seg];
    } else at = [...at, seg];
  }
  if (at[0] === 'paths' && at.length >= 3 && METHODS.has(String(at[2]))) {
    const rest = at.slice(3).join('.');
    return `${String(at[2]).toUpperCase()} ${String(at[1])}${rest ? ` ${rest}` : ''}`;
  }
  return at.join('.');
}

/** The breaking changes from `before` to `after`, one per location and action. */
export function breakingChanges(before: Json, after: Json): BreakingChange[] {
  return compareDocuments(before, after).breaking;
}

/**
 * Every change (count) and the breaking ones. api-smart-diff annotates the objects it is given (a
 * second comparison with the same objects saw changes that were not there), so it gets copies.
 */
export function compareDocuments(before: Json, after: Json): { total: number; breaking: BreakingChange[] } {
  const { diffs } = apiCompare(structuredClone(before), structuredClone(after));
  const seen = new Map<string, BreakingChange>();
  for (const d of diffs) {
    const last = d.path[d.path.length - 1];
    const breaking = d.type === 'breaking' || (d.action === 'replace' && last === 'type');
    if (!breaking) continue;
    const location = canonicalLocation(d.action === 'add' ? after : before, d.path as Segment[]);
    const id = `${location}|${d.action}`;
    if (!seen.has(id)) seen.set(id, { location, action: d.action, description: d.description ?? '' });
  }
  return {
    total: diffs.length,
    breaking: [...seen.values()].sort((a, b) => (a.location < b.location ? -1 : a.location > b.location ? 1 : 0)),
  };
}

/** `GET /cities parameters.q` → ['GET /cities', 'parameters', 'q']; `components.x` → ['', 'components', 'x']. */
function parts(location: string): string[] {
  const m = /^([A-Z]+ \S+)(?: (.*))?$/.exec(location);
  return m ? [m[1]!, ...(m[2] ? m[2].split('.') : [])] : ['', ...location.split('.')];
}

/** True when a changelog record covers the change (same place or a place above it). */
export function covers(record: string, location: string): boolean {
  const r = parts(record.trim());
  const l = parts(location);
  return r.length <= l.length && r.every((s, i) => s === l[i]);
}

/** The breaking changes no changelog entry's `breaking:` records. */
export function unrecorded(changes: BreakingChange[], entries: ChangelogEntry[]): BreakingChange[] {
  const records = entries.flatMap((e) => e.breaking);
  return changes.filter((c) => !records.some((r) => covers(r, c.location)));
}

/** One comparison, printed; true when it passes. */
function report(label: string, before: Json, after: Json, entries: ChangelogEntry[]): boolean {
  const { total, breaking: changes } = compareDocuments(before, after);
  const open = unrecorded(changes, entries);
  for (const c of changes)
    process.stdout.write(
      `${open.includes(c) ? 'BREAKING' : 'recorded'}\t${c.location}\t(${c.action}) ${c.description}\n`,
    );
  process.stdout.write(
    `openapi:breaking: ${label}: ${total} change(s), ${changes.length} breaking, ${open.length} not recorded in docs/changelog.yml\n`,
  );
  return open.length === 0;
}

export function gate(
  before: Json,
  after: Json,
  entries: ChangelogEntry[],
): { passed: boolean; open: BreakingChange[] } {
  const open = unrecorded(breakingChanges(before, after), entries);
  return { passed: open.length === 0, open };
}

export async function main(args: string[]): Promise<number> {
  const [command, ref = 'HEAD~', committed = SNAPSHOT_FILE] = args; // committed: another copy (tests)
  const file = path.resolve(projectRoot, command === 'snapshot' ? SNAPSHOT_FILE : committed);
  if (command === 'snapshot') {
    mkdirSync(path.dirname(file), { recursive: true });
    writeFileSync(file, servedSnapshot());
    process.stdout.write(`openapi:snapshot: wrote ${SNAPSHOT_FILE}\n`);
    return 0;
  }
  if (command !== 'breaking') {
    process.stderr.write('usage: openapi snapshot | breaking [git ref]\n');
    return 2;
  }
  const served = JSON.parse(openApiJson) as Json;
  const entries = changelogEntries();
  let ok = report(`committed ${committed} -> served`, JSON.parse(readFileSync(file, 'utf8')) as Json, served, entries);
  let previous: string | undefined;
  try {
    previous = execFileSync('git', ['show', `${ref}:${SNAPSHOT_FILE}`], {
      cwd: projectRoot,
      encoding: 'utf8',
      stdio: 'pipe',
    });
  } catch {
    process.stdout.write(`openapi:breaking: no ${SNAPSHOT_FILE} at ${ref}; compared with the committed copy only\n`);
  }
  if (previous !== undefined)
    ok = report(`${SNAPSHOT_FILE} at ${ref} -> served`, JSON.parse(previous) as Json, served, entries) && ok;
  if (!ok)
    process.stderr.write(
      'openapi:breaking: v1 changes only additively (docs/COMPATIBILITY.md). Undo the change, or record it in an entry ' +
        'of docs/changelog.yml (breaking: [location, ...]), then npm run openapi:snapshot\n',
    );
  return ok ? 0 : 1;
}

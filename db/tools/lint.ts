/**
 * plpgsql_check over every plpgsql function of api, private and admin
 * (db/CONVENTIONS.md "Linting"). SQL-language bodies need no linter: PostgreSQL
 * parses and plans them when a function file creates them on a fresh database.
 */
import path from 'node:path';
import pg from 'pg';
import { functionsFolder, readFunctionFiles } from './migrate';

export const LINTED_SCHEMAS = ['api', 'private', 'admin'];

export interface LintFinding {
  /** e.g. api.bars(text,integer,...) */
  fn: string;
  level: string;
  /** Line in the function body (1: the line of the opening $$). */
  bodyLine: number | null;
  /** Where that is in the function files (`21-bars.sql:123`), when the function is defined in one. */
  where: string | null;
  message: string;
  detail: string | null;
  hint: string | null;
  statement: string | null;
}

export interface LintResult {
  checked: number;
  errors: LintFinding[];
  warnings: LintFinding[];
  /** Trigger functions not attached to any trigger: plpgsql_check needs the table to check them. */
  unattached: string[];
}

export async function plpgsqlCheckAvailable(client: pg.ClientBase): Promise<boolean> {
  const { rows } = await client.query("select 1 from pg_available_extensions where name = 'plpgsql_check'");
  return rows.length > 0;
}

interface Target {
  fn: string;
  name: string;
  is_trigger: boolean;
  /** Trigger functions: the tables they are attached to (none: not checked). */
  tables: string[] | null;
  oldtable: string | null;
  newtable: string | null;
}

const TARGETS = `
  select p.oid::regprocedure::text as fn, n.nspname || '.' || p.proname as name,
         p.prorettype = 'trigger'::regtype as is_trigger,
         (select array_agg(distinct tg.tgrelid::regclass::text) from pg_trigger tg
           where tg.tgfoid = p.oid and not tg.tgisinternal) as tables,
         (select min(tg.tgoldtable) from pg_trigger tg where tg.tgfoid = p.oid) as oldtable,
         (select min(tg.tgnewtable) from pg_trigger tg where tg.tgfoid = p.oid) as newtable
  from pg_proc p
  join pg_namespace n on n.oid = p.pronamespace
  join pg_language l on l.oid = p.prolang
  where l.lanname = 'plpgsql' and n.nspname = any($1)
  order by 1`;

const CHECK = `
  select lineno, level, message, detail, hint, statement
  from plpgsql_check_function_tb($1::regprocedure, coalesce($2::regclass, 0::regclass),
         fatal_errors => false, other_warnings => true, extra_warnings => true,
         performance_warnings => false, security_warnings => false,
         oldtable => $3::name, newtable => $4::name)`;

interface CheckRow {
  lineno: number | null;
  level: string;
  message: string;
  detail: string | null;
  hint: string | null;
  statement: string | null;
}

/**
 * Runs plpgsql_check (the extension must be available on the server; it is created in this database).
 *
 * A trigger function is checked against each table it is attached to, with the transition tables its
 * triggers declare. Our sync triggers are shared by several tables and branch on TG_TABLE_NAME and
 * TG_OP, which a static checker cannot follow: a branch for private.bars fails when checked against
 * private.photos. So a trigger function's finding counts when it is found against every one of its
 * tables (a broken reference fails against all of them; a branch meant for another table does not).
 */
export async function lintDatabase(connectionString: string, folder = functionsFolder): Promise<LintResult> {
  const client = new pg.Client({ connectionString, application_name: 'db-lint' });
  await client.connect();
  const locate = functionLocator(folder);
  try {
    await client.query('create extension if not exists plpgsql_check');
    const targets = (await client.query<Target>(TARGETS, [LINTED_SCHEMAS])).rows;
    const result: LintResult = { checked: 0, errors: [], warnings: [], unattached: [] };
    for (const t of targets) {
      let rows: CheckRow[];
      if (!t.is_trigger) {
        rows = (await client.query<CheckRow>(CHECK, [t.fn, null, null, null])).rows;
      } else if (!t.tables?.length) {
        result.unattached.push(t.fn);
        continue;
      } else {
        const perTable: CheckRow[][] = [];
        for (const table of t.tables) {
          perTable.push((await client.query<CheckRow>(CHECK, [t.fn, table, t.oldtable, t.newtable])).rows);
        }
        const key = (r: CheckRow) => `${r.lineno}\0${r.level}\0${r.message}`;
        const rest = perTable.slice(1).map((rs) => new Set(rs.map(key)));
        rows = perTable[0]!.filter((r) => rest.every((s) => s.has(key(r))));
      }
      result.checked++;
      const seen = new Set<string>();
      for (const r of rows) {
        const id = `${r.lineno}\0${r.level}\0${r.message}\0${r.detail}`;
        if (seen.has(id)) continue;
        seen.add(id);
        const finding: LintFinding = {
          fn: t.fn,
          level: r.level,
          bodyLine: r.lineno,
          where: locate(t.name, r.lineno),
          message: r.message,
          detail: r.detail,
          hint: r.hint,
          statement: r.statement,
        };
        (r.level === 'error' ? result.errors : result.warnings).push(finding);
      }
    }
    return result;
  } finally {
    await client.end();
  }
}

/**
 * Maps (function name, body line) to `file.sql:line`: the body's line 1 is the
 * line of the dollar quote that opens it after `create or replace function <name>(`.
 */
function functionLocator(folder: string): (name: string, bodyLine: number | null) => string | null {
  const files = readFunctionFiles(folder);
  const starts = new Map<string, { file: string; line: number }>();
  for (const f of files) {
    const lines = f.sql.split('\n');
    for (let i = 0; i < lines.length; i++) {
      const m = /create\s+(?:or\s+replace\s+)?function\s+([a-z_][\w]*\.[a-z_][\w]*)\s*\(/i.exec(lines[i]!);
      if (!m) continue;
      const name = m[1]!.toLowerCase();
      for (let j = i; j < lines.length; j++) {
        if (/\$[a-z_]*\$/i.test(lines[j]!)) {
          starts.set(name, { file: f.name, line: j + 1 });
          break;
        }
      }
    }
  }
  return (name, bodyLine) => {
    const start = starts.get(name);
    if (!start) return null;
    return bodyLine == null ? start.file : `${start.file}:${start.line + bodyLine - 1}`;
  };
}

export function formatFinding(f: LintFinding, root = path.relative(process.cwd(), functionsFolder)): string {
  const where = f.where ? `${path.join(root, f.where)}: ` : '';
  const line = f.bodyLine != null ? ` (body line ${f.bodyLine})` : '';
  const extra = [f.detail, f.hint && `hint: ${f.hint}`].filter(Boolean).join('; ');
  return `${where}${f.level}: ${f.fn}${line}: ${f.message}${extra ? ` (${extra})` : ''}`;
}

/** True when the CI environment variable says this is a CI run (CI=true, as GitHub Actions and GitLab set it, or 1). */
export function inCi(env: NodeJS.ProcessEnv = process.env): boolean {
  const ci = (env.CI ?? '').trim().toLowerCase();
  return ci !== '' && ci !== 'false' && ci !== '0';
}

/**
 * What `npm run db:lint` does when the server has no plpgsql_check: in CI it fails (a lint that
 * cannot run is not a pass); locally (the embedded PostgreSQL ships no extension) it skips and says so.
 */
export function missingExtensionOutcome(env: NodeJS.ProcessEnv = process.env): { exitCode: 0 | 1; message: string } {
  const install = 'Debian: apt-get install postgresql-15-plpgsql-check';
  return inCi(env)
    ? {
        exitCode: 1,
        message: `db:lint: FAILED: the plpgsql_check extension is not installed on this PostgreSQL server, and CI must lint (${install})\n`,
      }
    : {
        exitCode: 0,
        message:
          `db:lint: SKIPPED, nothing was checked: the plpgsql_check extension is not installed on this PostgreSQL server ` +
          `(${install}; in CI, with CI=true, this fails)\n`,
      };
}

import { readFunctionFiles } from '../../db/tools/migrate';

/**
 * db/CONVENTIONS.md "Size": a function is at most 120 lines, from `create or replace function`
 * to its closing dollar quote; the longer ones are listed there, each with its reason, and here.
 */
const LIMIT = 120;
const EXCEPTIONS = new Set(['api.search', 'private.search_fuzzy_names']);

/** Every function of a function file with its length in lines. */
function functionLengths(sql: string): { name: string; lines: number }[] {
  const out: { name: string; lines: number }[] = [];
  const head = /^create or replace function ([a-z_]+\.[a-z_]+)/gm;
  for (let m = head.exec(sql); m; m = head.exec(sql)) {
    const quote = /\$[a-z_]*\$/g;
    quote.lastIndex = m.index;
    const open = quote.exec(sql);
    if (!open) throw new Error(`${m[1]}: no body`);
    const close = sql.indexOf(open[0], open.index + open[0].length);
    if (close < 0) throw new Error(`${m[1]}: unterminated body`);
    out.push({ name: m[1]!, lines: sql.slice(m.index, close).split('\n').length });
    head.lastIndex = close;
  }
  return out;
}

describe('SQL function size', () => {
  const functions = readFunctionFiles().flatMap((f) => functionLengths(f.sql).map((fn) => ({ ...fn, file: f.name })));

  test('the measure counts a function from its head to its closing quote', () => {
    const sql = 'create or replace function private.x() returns int\n  language sql\nas $$\n  select 1\n$$;\n';
    expect(functionLengths(sql)).toEqual([{ name: 'private.x', lines: 5 }]);
    expect(functionLengths(sql.replaceAll('$$', '$body$'))).toEqual([{ name: 'private.x', lines: 5 }]);
  });

  test('the function files are measured (api.bars among them)', () => {
    expect(functions.length).toBeGreaterThan(100);
    expect(functions.find((f) => f.name === 'api.bars')!.lines).toBeLessThanOrEqual(LIMIT);
  });

  test(`no function is longer than ${LIMIT} lines except the listed ones`, () => {
    const long = functions.filter((f) => f.lines > LIMIT && !EXCEPTIONS.has(f.name));
    expect(long).toEqual([]);
  });

  test('every listed exception is still longer than the limit (else it leaves the list)', () => {
    const stillLong = new Set(functions.filter((f) => f.lines > LIMIT).map((f) => f.name));
    expect([...EXCEPTIONS].filter((n) => !stillLong.has(n))).toEqual([]);
  });
});

/**
 * Declared query parameters: one object per query parameter of an endpoint
 * (endpoints.ts) carries its OpenAPI parameter object, how it is read and
 * checked (the rules of params.ts) and the SQL arguments of the endpoint's
 * api function it feeds (`price_level` → `price_levels`). From the endpoint's
 * declarations `readArgs` builds the call's named arguments and calls.ts the
 * call's parameter list, so a new parameter is one declaration, the SQL
 * function and a test.
 */
import type { Request } from 'express';
import { MAX_Q, QueryParams, badRequest, rules, type IntRule, type NumberRule } from './params';

export type Schema = Record<string, unknown>;

export interface Param<A extends string = string> {
  /** The query parameter's name, as the request spells it. */
  readonly name: string;
  /** Its OpenAPI parameter object (name, in, required, schema, description). */
  readonly spec: Schema;
  /** The SQL arguments it feeds (without the `p_` prefix); none when its route reads it (export, usage). */
  readonly args: readonly A[];
  /** Reads and checks it: each argument's value, null when absent (the 400 names the parameter). */
  readonly read?: (q: QueryParams) => { readonly [K in A]: unknown };
}

/** The SQL argument names a list of declared parameters feeds. */
export type ArgOf<P> = P extends Param<infer A> ? A : never;
/** `/bars_by_city/{state}/{city}` → 'state' | 'city'. */
export type PathNames<S extends string> = S extends `${string}{${infer N}}${infer Rest}` ? N | PathNames<Rest> : never;

/** The path parameters of an OpenAPI path template, in order. */
export const pathNames = (path: string): string[] => [...path.matchAll(/\{([^}]+)\}/g)].map((m) => m[1]!);

/** An OpenAPI query parameter object. */
export const query = (name: string, schema: Schema, description: string, required = false): Schema => ({
  name,
  in: 'query',
  required,
  schema,
  description,
});

interface Options<A extends string> {
  /** The SQL argument it feeds (default: its own name). */
  arg?: A;
  required?: boolean;
}

/** A parameter that feeds one SQL argument: `read` gives its value (undefined: absent, passed as null). */
export function param<const N extends string, const A extends string = N>(
  name: N,
  schema: Schema,
  description: string,
  read: (q: QueryParams, name: N) => unknown,
  options: Options<A> = {},
): Param<NoInfer<A>> {
  const arg = (options.arg ?? name) as A;
  return {
    name,
    spec: query(name, schema, description, options.required),
    args: [arg],
    read: (q) => ({ [arg]: read(q, name) ?? null }) as { readonly [K in A]: unknown },
  };
}

/** A parameter its route reads itself (the export and usage endpoints): documented and accepted only. */
export const readByRoute = (name: string, schema: Schema, description: string): Param<never> => ({
  name,
  spec: query(name, schema, description),
  args: [],
});

/** An integer range; without a default an absent parameter is null (the SQL default applies). */
export type IntRange = Omit<IntRule, 'default'> & { default?: number };

export const numberSchema = (rule: NumberRule): Schema => ({
  type: 'number',
  ...(rule.minExclusive ? { exclusiveMinimum: rule.min } : { minimum: rule.min }),
  maximum: rule.max,
});

/** The parameter kinds of the partner contract, each with its OpenAPI schema and its rule. */
export const p = {
  int: <const N extends string, const A extends string = N>(
    name: N,
    rule: IntRange,
    description: string,
    options?: Options<A>,
  ) =>
    param(
      name,
      {
        type: 'integer',
        minimum: rule.min,
        maximum: rule.max,
        ...(rule.default === undefined ? {} : { default: rule.default }),
      },
      description,
      (q) =>
        rule.default === undefined && q.string(name) === undefined ? undefined : q.int(name, { default: 0, ...rule }),
      options,
    ),

  number: <const N extends string, const A extends string = N>(
    name: N,
    rule: NumberRule,
    description: string,
    options?: Options<A>,
  ) => param(name, numberSchema(rule), description, (q) => q.number(name, rule), options),

  /** YYYY-MM-DD or an ISO 8601 date-time (offset optional: the city's local time). */
  date: <const N extends string>(name: N, dflt: string) =>
    param(
      name,
      {
        type: 'string',
        pattern: '^\\d{4}-\\d{2}-\\d{2}(T\\d{2}:\\d{2}(:\\d{2}(\\.\\d{1,6})?)?([Zz]|[+-]\\d{2}:?\\d{2})?)?$',
      },
      `YYYY-MM-DD (a local day of the city; an end_date includes its whole day) or an ISO 8601 date-time (inclusive; without an offset it is the city's local time; send a + offset as %2B). Default: ${dflt}`,
      (q) => q.date(name),
    ),

  /** An ISO 8601 date-time with an offset. */
  dateTime: <const N extends string>(name: N, description: string) =>
    param(name, { type: 'string', format: 'date-time' }, description, (q) => q.dateTime(name)),

  /** `true` or `false`. */
  boolean: <const N extends string>(name: N, description: string) =>
    param(name, { type: 'string', enum: ['true', 'false'] }, description, (q) => q.boolean(name)),

  oneOf: <const N extends string>(name: N, values: readonly string[], description: string) =>
    param(name, { type: 'string', enum: [...values] }, description, (q) => q.oneOf(name, values)),

  /** A string that must not be blank (an empty one would silently match nothing). */
  nonEmpty: <const N extends string>(name: N, description: string) =>
    param(name, { type: 'string', minLength: 1 }, description, (q) => q.nonEmpty(name)),

  /** A comma-separated list of allowed values (any of them), duplicates once. */
  listOf: <const N extends string, const A extends string = N>(
    name: N,
    values: readonly string[],
    description: string,
    options: Options<A> & { pattern?: string; map?: (item: string) => unknown } = {},
  ) => {
    const item = `(${values.join('|')})`;
    const pattern = options.pattern ?? `^${item}(,${item})*$`;
    return param(
      name,
      { type: 'string', pattern },
      description,
      (q) => {
        const items = q.listOf(name, values);
        return options.map ? items?.map(options.map) : items;
      },
      options,
    );
  },

  /** A search text: not blank, at most MAX_Q characters. */
  text: <const N extends string>(name: N, description: string, options: { required?: boolean } = {}) =>
    param(
      name,
      { type: 'string', minLength: 1, maxLength: MAX_Q },
      description,
      (q) => {
        const text = q.string(name);
        if (options.required && (text === undefined || text.trim() === ''))
          throw badRequest(`${name} is required and must not be blank`);
        return text === undefined ? undefined : rules.text(name, text);
      },
      options,
    ),

  /** A string matching a pattern; `message` is the 400. */
  pattern: <const N extends string>(name: N, pattern: string, message: string, description: string) => {
    const re = new RegExp(pattern);
    return param(name, { type: 'string', pattern }, description, (q) => {
      const value = q.string(name);
      if (value !== undefined && !re.test(value)) throw badRequest(message);
      return value;
    });
  },
};

/** The checked values of a request, by SQL argument name. */
export type Args = Readonly<Record<string, unknown>>;

/** What readArgs needs of an endpoint declaration. */
export interface Readable {
  path: string;
  query: readonly Param[];
  /** Checks across parameters (radius needs latitude and longitude, ...), after each parameter's own. */
  check?: (args: Args) => void;
}

/**
 * The named call arguments of one request: the path parameters, then each
 * declared query parameter read and checked in declaration order (the first
 * bad one is the 400), then the endpoint's checks across parameters.
 */
export function readArgs(e: Readable, req: Pick<Request, 'params' | 'query'>): Record<string, unknown> {
  const q = new QueryParams(req.query);
  const args: Record<string, unknown> = {};
  for (const name of pathNames(e.path)) args[name] = (req.params as Record<string, string>)[name];
  for (const declared of e.query) {
    if (!declared.read) throw new Error(`${e.path}: ${declared.name} is read by its route, not by readArgs`);
    Object.assign(args, declared.read(q));
  }
  e.check?.(args);
  return args;
}

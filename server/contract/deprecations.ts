/**
 * Deprecations (decisions.md v1.3 "Deprecations and the changelog"; docs/COMPATIBILITY.md).
 * A deprecation is declared once (endpoints.ts, DEPRECATIONS); from that declaration come:
 *
 * - on each request that uses it, from its `since` day: `Deprecation: @<unix seconds>` (RFC 9745),
 *   `Sunset: <HTTP-date>` (RFC 8594) and `Link: <changelog>; rel="deprecation"` (deprecationGate);
 * - from its `sunset` day: 410 `{"error", "sunset", "replacement", "request_id"}` (an endpoint or a
 *   parameter; a deprecated response field keeps its endpoint answering);
 * - `deprecated: true` in the OpenAPI document (markDeprecations) and `@deprecated(reason:)` in the
 *   partner GraphQL schema (deprecateSdl);
 * - the per-key count of deprecated calls: the gate leaves what the request used in
 *   res.locals.deprecatedCalls, the credentials guard hands it to its in-memory tally
 *   (server/usage/deprecated-calls.ts), shown in GET usage and the operator GraphQL.
 *
 * The clock is injected (`now`), so tests of "after the sunset" do not depend on the date.
 */
import '../graphile/env'; // before anything from postgraphile
import type { RequestHandler, Response } from 'express';
import {
  getNamedType,
  Kind,
  parse,
  print,
  TypeInfo,
  visit,
  visitWithTypeInfo,
  type DocumentNode,
  type GraphQLSchema,
  type ConstDirectiveNode,
  type DefinitionNode,
  type FieldDefinitionNode,
  type InputValueDefinitionNode,
} from 'postgraphile/graphql';
import { ENDPOINTS, type Deprecation, type Schema } from './endpoints';
import { sendError } from './errors';

/** A sunset at least this many calendar months after the deprecation (decisions.md, COMPATIBILITY.md). */
export const MIN_NOTICE_MONTHS = 6;

const DAY = /^(\d{4})-(\d{2})-(\d{2})$/;

/** UTC midnight of a YYYY-MM-DD day in ms; NaN when it is not a real day. */
export function dayStart(day: string): number {
  const m = DAY.exec(day);
  if (!m) return NaN;
  const ms = Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3]));
  return new Date(ms).toISOString().slice(0, 10) === day ? ms : NaN;
}

/** `YYYY-MM-DDT00:00:00Z`, the API's timestamp form (the 410's and GET usage's `sunset`). */
export const sunsetTimestamp = (d: Deprecation): string => `${d.sunset}T00:00:00Z`;

/** What a deprecation is, as GET usage and the operator views name it: `GET /bars parameter radius`. */
export function deprecationWhat(d: Deprecation): string {
  const op = `GET ${d.endpoint.path}`;
  if (d.parameter !== undefined && d.newDefault !== undefined) return `${op} default of ${d.parameter}`;
  if (d.parameter !== undefined) return `${op} parameter ${d.parameter}`;
  if (d.field !== undefined) return `${op} field ${d.field}`;
  return op;
}

const GRAPHQL_TARGET = /^([A-Za-z_]\w*)\.([A-Za-z_]\w*)(?:\(([A-Za-z_]\w*)\))?$/;

/** Checks every declaration; throws one error listing every problem (server start fails on it). */
export function validateDeprecations(list: readonly Deprecation[]): void {
  const problems: string[] = [];
  const seen = new Set<string>();
  for (const d of list) {
    const what = d.endpoint?.path ? deprecationWhat(d) : '(no endpoint)';
    const bad = (msg: string) => problems.push(`${what}: ${msg}`);
    if (!ENDPOINTS.includes(d.endpoint)) bad('endpoint is not a declared endpoint (endpoints.ts E)');
    if (seen.has(what)) bad('declared twice');
    seen.add(what);
    if (d.parameter !== undefined && d.field !== undefined) bad('a parameter or a field, not both');
    if (d.newDefault !== undefined && d.parameter === undefined) bad('a new default needs its parameter');
    if (d.newDefault !== undefined && !d.newDefault.to) bad('a new default needs its value (to)');
    if (d.parameter !== undefined && !d.endpoint?.query.some((p) => p.name === d.parameter))
      bad(`parameter ${JSON.stringify(d.parameter)} is not a query parameter of the endpoint`);
    if (d.field !== undefined && !/^[A-Za-z]\w*\.[A-Za-z_]\w*$/.test(d.field))
      bad('field must be <component schema>.<property>');
    if (d.graphql !== undefined && !GRAPHQL_TARGET.test(d.graphql))
      bad('graphql must be Type.field or Type.field(argument)');
    const since = dayStart(d.since);
    const sunset = dayStart(d.sunset);
    if (Number.isNaN(since)) bad(`since ${JSON.stringify(d.since)} is not a YYYY-MM-DD day`);
    if (Number.isNaN(sunset)) bad(`sunset ${JSON.stringify(d.sunset)} is not a YYYY-MM-DD day`);
    if (!Number.isNaN(since) && !Number.isNaN(sunset)) {
      const from = new Date(since);
      const earliest = Date.UTC(from.getUTCFullYear(), from.getUTCMonth() + MIN_NOTICE_MONTHS, from.getUTCDate());
      if (sunset < earliest)
        bad(
          `sunset ${d.sunset} is less than ${MIN_NOTICE_MONTHS} months after ${d.since} (earliest: ${iso(earliest)})`,
        );
    }
    if (!d.replacement?.trim()) bad('replacement is required');
    if (!/^(https?:\/\/[^\s<>]+|\/[^\s<>]*)$/.test(d.changelog ?? ''))
      bad('changelog must be an absolute http(s) URL or a path starting with /');
  }
  if (problems.length) throw new Error(`invalid deprecation declarations:\n  ${problems.join('\n  ')}`);
}

const iso = (ms: number) => new Date(ms).toISOString().slice(0, 10);

/** What the gate leaves for the usage tally (the guard's finish hook reads it). */
export interface DeprecationUse {
  what: string;
  sunset: string;
  replacement: string;
  changelog: string;
}
export interface DeprecatedCalls {
  uses: DeprecationUse[];
  at: number;
}
export const deprecatedCallsOf = (res: Response): DeprecatedCalls | undefined =>
  res.locals.deprecatedCalls as DeprecatedCalls | undefined;

/**
 * The middleware in front of the partner routes (mounted below the prefix, after the credentials
 * guard): headers on a request that uses a deprecation, 410 after its sunset. A no-op without
 * declarations (the usual case): nothing is matched per request.
 */
export function deprecationGate(list: readonly Deprecation[], now: () => number = Date.now): RequestHandler {
  if (!list.length) return (_req, _res, next) => next();
  const compiled = list.map((d) => ({
    d,
    what: deprecationWhat(d),
    since: dayStart(d.since),
    sunset: dayStart(d.sunset),
    path: new RegExp(
      `^${d.endpoint.path.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\\?\{[^}]+\\?\}/g, '[^/]+')}/?$`,
      'i',
    ),
  }));
  return (req, res, next) => {
    if (req.method !== 'GET' && req.method !== 'HEAD') return next();
    const t = now();
    const query = req.query as Record<string, unknown>;
    const inForce = compiled.filter((c) => t >= c.since && c.path.test(req.path));
    const used = inForce
      .filter((c) => !c.d.newDefault && (c.d.parameter === undefined || Object.hasOwn(query, c.d.parameter)))
      .map((c) => c.d);
    const defaults = inForce.filter((c) => c.d.newDefault && !Object.hasOwn(query, c.d.parameter!));
    for (const c of defaults.filter((c) => t >= c.sunset)) {
      // the new default is in force: the request is the one that sends it (req.query re-reads req.url)
      const pair = `${encodeURIComponent(c.d.parameter!)}=${encodeURIComponent(c.d.newDefault!.to)}`;
      req.url += (req.url.includes('?') ? '&' : '?') + pair;
    }
    const pending = defaults.filter((c) => t < c.sunset).map((c) => c.d);
    if (pending.length) {
      // whether the answer would change is known once it is built: sendCacheable calls this with its text
      res.locals.checkAnswer = ((body: string) => {
        const affected = pending.filter((d) => d.newDefault!.affects(body));
        if (affected.length || used.length) announce(res, [...used, ...affected], t);
      }) satisfies AnswerCheck;
    }
    if (!used.length) return next();
    const gone = announce(res, used, t);
    if (!gone) return next();
    sendError(res, 410, goneMessage(gone), { sunset: sunsetTimestamp(gone), replacement: gone.replacement });
  };
}

/** What the gate leaves for a deprecation decided by the answer (newDefault); sendCacheable runs it. */
export type AnswerCheck = (body: string) => void;
export const answerCheckOf = (res: Response): AnswerCheck | undefined =>
  res.locals.checkAnswer as AnswerCheck | undefined;

export const goneMessage = (d: Deprecation): string =>
  `${deprecationWhat(d)} was removed on ${d.sunset}; use instead: ${d.replacement}`;

/**
 * A request uses these deprecations (already in force at `t`): the three headers (the earliest
 * deprecation and sunset; every changelog link) and what the usage tally counts. Returns the one
 * whose sunset has passed, if any: an endpoint or a parameter; a field only when the request
 * `selects` it explicitly (GraphQL), never a REST response field (its endpoint keeps answering).
 */
export function announce(
  res: Response,
  used: readonly Deprecation[],
  t: number,
  selects = false,
): Deprecation | undefined {
  res.locals.deprecatedCalls = {
    uses: used.map((d) => ({
      what: deprecationWhat(d),
      sunset: d.sunset,
      replacement: d.replacement,
      changelog: d.changelog,
    })),
    at: t,
  } satisfies DeprecatedCalls;
  res.setHeader('Deprecation', `@${Math.floor(Math.min(...used.map((d) => dayStart(d.since))) / 1000)}`);
  res.setHeader('Sunset', new Date(Math.min(...used.map((d) => dayStart(d.sunset)))).toUTCString());
  res.setHeader('Link', [...new Set(used.map((d) => `<${d.changelog}>; rel="deprecation"`))].join(', '));
  return used.find((d) => t >= dayStart(d.sunset) && (selects || d.field === undefined));
}

const graphqlUses = new WeakMap<DocumentNode, Map<readonly Deprecation[], Deprecation[]>>();

/**
 * The declarations whose `graphql` target a document selects: a field (`Type.field`), an argument
 * given a value in the document (`Type.field(argument)`) or an input object field written in it.
 * Values passed only through variables are not seen. Cached per parsed document (documents are
 * cached by text: graphql/document.ts).
 */
export function graphqlDeprecationUses(
  schema: GraphQLSchema,
  document: DocumentNode,
  list: readonly Deprecation[],
): Deprecation[] {
  const targets = new Map(list.filter((d) => d.graphql !== undefined).map((d) => [d.graphql!, d]));
  if (!targets.size) return [];
  let byList = graphqlUses.get(document);
  const cached = byList?.get(list);
  if (cached) return cached;
  const found = new Set<Deprecation>();
  const hit = (target: string) => {
    const d = targets.get(target);
    if (d) found.add(d);
  };
  const info = new TypeInfo(schema);
  visit(
    document,
    visitWithTypeInfo(info, {
      Field(node) {
        const parent = info.getParentType()?.name;
        if (!parent) return;
        const field = `${parent}.${node.name.value}`;
        hit(field);
        for (const arg of node.arguments ?? []) hit(`${field}(${arg.name.value})`);
      },
      ObjectField(node) {
        const parent = info.getParentInputType();
        if (parent) hit(`${getNamedType(parent).name}.${node.name.value}`);
      },
    }),
  );
  const uses = [...found];
  if (!byList) graphqlUses.set(document, (byList = new Map()));
  byList.set(list, uses);
  return uses;
}

/** The reason shown by `deprecated` descriptions and GraphQL's @deprecated. */
export const deprecationReason = (d: Deprecation): string =>
  `Deprecated since ${d.since}, removed on ${d.sunset}: ${d.replacement} (${d.changelog})`;

type Doc = {
  paths: Record<string, { get: Schema }>;
  components: { schemas: Record<string, Schema>; responses: Record<string, Schema>; headers: Record<string, Schema> };
};

/**
 * The OpenAPI document with the declarations marked (and, while there are any, the Deprecation,
 * Sunset and Link headers and the 410 among its components): `deprecated: true` on the operation, the
 * parameter or the schema property; the Deprecation/Sunset/Link headers on the operation's 200 and
 * 304; the 410 response (endpoints and parameters). The input is not changed.
 */
export function markDeprecations<T>(
  document: T,
  list: readonly Deprecation[],
  gone: { schema: Schema; response: Schema; headers: Record<string, Schema> },
): T {
  if (!list.length) return document;
  const doc = structuredClone(document) as unknown as Doc;
  Object.assign(doc.components.headers, gone.headers);
  if (list.some((d) => d.field === undefined && d.newDefault === undefined)) {
    doc.components.schemas.Gone = gone.schema;
    doc.components.responses.Gone = gone.response;
  }
  const headerRef = (name: string) => ({ $ref: `#/components/headers/${name}` });
  for (const d of list) {
    const op = doc.paths[d.endpoint.path]?.get;
    if (!op) throw new Error(`${deprecationWhat(d)}: not in the OpenAPI document`);
    const reason = deprecationReason(d);
    if (d.parameter !== undefined) {
      const params = op.parameters as Schema[];
      const i = params.findIndex((p) => p.name === d.parameter && p.in === 'query');
      if (i < 0) throw new Error(`${deprecationWhat(d)}: no such parameter in the OpenAPI document`);
      const note = d.newDefault ? `The default becomes ${d.newDefault.to}: ${reason}` : reason;
      params[i] = {
        ...params[i],
        ...(d.newDefault ? {} : { deprecated: true }),
        description: `${String(params[i]!.description ?? '')} ${note}`,
      };
    } else if (d.field !== undefined) {
      const [name, property] = d.field.split('.') as [string, string];
      const props = doc.components.schemas[name]?.properties as Record<string, Schema> | undefined;
      if (!props?.[property]) throw new Error(`${deprecationWhat(d)}: no such schema property in the OpenAPI document`);
      props[property] = { ...props[property], deprecated: true, description: reason };
    } else {
      op.deprecated = true;
    }
    op.description = `${String(op.description ?? op.summary ?? '')}\n\n**${deprecationWhat(d)}**: ${reason}`.trim();
    const responses = op.responses as Record<string, Schema>;
    for (const status of ['200', '304']) {
      const r = responses[status];
      if (r) r.headers = { ...(r.headers as Schema), ...deprecationHeaderRefs(headerRef) };
    }
    if (d.field === undefined && d.newDefault === undefined) responses['410'] = { $ref: '#/components/responses/Gone' };
  }
  // The GraphQL endpoint (beta), when a declaration names a GraphQL target: the headers on its
  // answers, and its 410 (a GraphQL error body, like its 400) after the sunset.
  if (list.some((d) => d.graphql !== undefined)) {
    for (const op of Object.values(doc.paths['/graphql'] ?? {}) as Schema[]) {
      const responses = op.responses as Record<string, Schema>;
      for (const status of ['200', '400']) {
        const r = responses[status];
        if (r) r.headers = { ...(r.headers as Schema), ...deprecationHeaderRefs(headerRef) };
      }
      responses['410'] = {
        ...responses['400'],
        description: 'A deprecated field or argument after its sunset (error code GONE; docs/COMPATIBILITY.md)',
      };
    }
  }
  return doc as unknown as T;
}

const deprecationHeaderRefs = (ref: (name: string) => Schema) => ({
  Deprecation: ref('Deprecation'),
  Sunset: ref('Sunset'),
  Link: ref('Link'),
});

/**
 * The partner GraphQL SDL with `@deprecated(reason:)` on each declaration's `graphql` target: a
 * field of an object or input type, or an argument (`Type.field(argument)`). Throws when a target
 * does not exist.
 */
export function deprecateSdl(sdl: string, list: readonly Deprecation[]): string {
  const targets = list.filter((d) => d.graphql !== undefined);
  if (!targets.length) return sdl;
  const found = new Set<Deprecation>();
  const directive = (d: Deprecation): ConstDirectiveNode => ({
    kind: Kind.DIRECTIVE,
    name: { kind: Kind.NAME, value: 'deprecated' },
    arguments: [
      {
        kind: Kind.ARGUMENT,
        name: { kind: Kind.NAME, value: 'reason' },
        value: { kind: Kind.STRING, value: deprecationReason(d) },
      },
    ],
  });
  const mark = <N extends FieldDefinitionNode | InputValueDefinitionNode>(node: N, d: Deprecation): N => {
    found.add(d);
    return { ...node, directives: [...(node.directives ?? []), directive(d)] };
  };
  const doc = parse(sdl);
  const definitions = doc.definitions.map((def): DefinitionNode => {
    if (def.kind !== Kind.OBJECT_TYPE_DEFINITION && def.kind !== Kind.INPUT_OBJECT_TYPE_DEFINITION) return def;
    const fields = (def.fields ?? []).map((field: FieldDefinitionNode | InputValueDefinitionNode) => {
      let out = field;
      for (const d of targets) {
        const [, type, name, arg] = GRAPHQL_TARGET.exec(d.graphql!)!;
        if (type !== def.name.value || name !== field.name.value) continue;
        if (arg === undefined) out = mark(out, d);
        else if (out.kind === Kind.FIELD_DEFINITION)
          out = {
            ...out,
            arguments: (out.arguments ?? []).map((a) => (a.name.value === arg ? mark(a, d) : a)),
          };
      }
      return out;
    });
    return { ...def, fields } as DefinitionNode;
  });
  const missing = targets.filter((d) => !found.has(d));
  if (missing.length)
    throw new Error(`deprecations not in the partner GraphQL schema: ${missing.map((d) => d.graphql).join(', ')}`);
  return print({ ...doc, definitions });
}

/**
 * Contract checking for API tests: every response a test receives through
 * `call()` is validated against the served OpenAPI document (status listed for
 * the operation, required headers present and well-formed, body valid JSON
 * matching the schema), so the document cannot drift from the code.
 */
import Ajv2020, { type ValidateFunction } from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import type { Express } from 'express';
import request from 'supertest';
import { openApiDocument } from '../../server/openapi/document';
import { PARTNER_PREFIX } from '../../server/contract/identity';

type Json = Record<string, unknown>;
const doc = openApiDocument as unknown as Json;
const DOC_ID = 'openapi.json';

const ajv = new Ajv2020({ strict: false, allErrors: true });
addFormats(ajv);
ajv.addSchema(doc, DOC_ID);

const validators = new Map<string, ValidateFunction>();
function validator(pointer: string): ValidateFunction {
  let v = validators.get(pointer);
  if (!v) {
    v = ajv.compile({ $ref: `${DOC_ID}#${pointer}` });
    validators.set(pointer, v);
  }
  return v;
}

const escape = (s: string) => s.replace(/~/g, '~0').replace(/\//g, '~1');
function at(pointer: string): Json {
  let node: unknown = doc;
  for (const part of pointer.split('/').slice(1)) node = (node as Json)[part.replace(/~1/g, '/').replace(/~0/g, '~')];
  if (node === undefined) throw new Error(`OpenAPI document has nothing at ${pointer}`);
  return node as Json;
}
/** Follows $ref (responses, headers) to the pointer of the object itself. */
function deref(pointer: string): string {
  const node = at(pointer);
  return typeof node.$ref === 'string' ? deref(node.$ref.slice(1)) : pointer;
}

const templates = Object.keys(doc.paths as Json).map((template) => ({
  template,
  regex: new RegExp(`^${template.replace(/\{[^}]+\}/g, '[^/]+')}$`),
}));

/** The pointer of the documented response for a request (throws if the status is not documented). */
export function responsePointer(method: string, url: string, status: number): string {
  const path = new URL(url, 'http://x').pathname;
  if (method !== 'GET' && method !== 'HEAD') {
    if (status !== 405) throw new Error(`${method} ${url}: expected 405, got ${status}`);
    return '/components/responses/MethodNotAllowed';
  }
  const match = path.startsWith(`${PARTNER_PREFIX}/`)
    ? templates.find((t) => t.regex.test(path.slice(PARTNER_PREFIX.length)))
    : undefined;
  if (!match) {
    const generic: Record<number, string> = {
      404: 'NotFound',
      406: 'NotAcceptable',
      401: 'Unauthorized',
      403: 'Forbidden',
      429: 'TooManyRequests',
      503: 'Unavailable',
      500: 'InternalError',
    };
    if (!generic[status]) throw new Error(`${method} ${url}: undocumented path answered ${status}`);
    return `/components/responses/${generic[status]}`;
  }
  const responses = `/paths/${escape(match.template)}/get/responses`;
  if (!(String(status) in at(responses)))
    throw new Error(`${method} ${url}: status ${status} is not documented for ${match.template}`);
  return deref(`${responses}/${status}`);
}

export interface ContractResponse {
  status: number;
  headers: Record<string, string>;
  text: string;
  /** Parsed from the text (undefined for HEAD). */
  body: any; // eslint-disable-line @typescript-eslint/no-explicit-any
}

export function validateResponse(
  method: string,
  url: string,
  res: { status: number; headers: Record<string, string>; text?: string },
): void {
  const pointer = responsePointer(method, url, res.status);
  const problems: string[] = [];
  const bodiless = method === 'HEAD' || res.status === 304;
  if (res.status !== 304 && !/^application\/json(;|$)/.test(res.headers['content-type'] ?? ''))
    problems.push(`Content-Type is ${res.headers['content-type']}`);
  const headers = (at(pointer).headers ?? {}) as Json;
  for (const name of Object.keys(headers)) {
    const headerPointer = deref(`${pointer}/headers/${escape(name)}`);
    const header = at(headerPointer);
    const raw = res.headers[name.toLowerCase()];
    if (raw === undefined) {
      if (header.required) problems.push(`missing header ${name}`);
      continue;
    }
    const schema = header.schema as Json;
    const value = schema.type === 'integer' ? Number(raw) : raw;
    const v = validator(`${headerPointer}/schema`);
    if (!v(value)) problems.push(`header ${name}: ${raw} ${ajv.errorsText(v.errors)}`);
  }
  if (!bodiless) {
    let body: unknown;
    try {
      body = JSON.parse(res.text ?? '');
    } catch {
      problems.push(`body is not JSON: ${res.text?.slice(0, 200)}`);
    }
    if (body !== undefined) {
      const v = validator(`${pointer}/content/application~1json/schema`);
      if (!v(body)) problems.push(`body: ${ajv.errorsText(v.errors, { separator: '\n  ' })}`);
    }
  }
  if (problems.length) {
    throw new Error(
      `${method} ${url} -> ${res.status} breaks the OpenAPI document:\n  ${problems.join('\n  ')}\n${res.text?.slice(0, 2000) ?? ''}`,
    );
  }
}

/** A request through supertest whose response is validated against the document before the test sees it. */
export async function call(
  app: Express,
  method: string,
  url: string,
  headers: Record<string, string> = {},
): Promise<ContractResponse> {
  const agent = request(app) as unknown as Record<string, (url: string) => request.Test>;
  let test = agent[method.toLowerCase()]!(url);
  for (const [k, v] of Object.entries(headers)) test = test.set(k, v);
  const res = await test;
  const bodiless = method === 'HEAD' || res.status === 304;
  const text = bodiless ? '' : res.text;
  validateResponse(method, url, { status: res.status, headers: res.headers as Record<string, string>, text });
  return {
    status: res.status,
    headers: res.headers as Record<string, string>,
    text,
    body: bodiless ? undefined : JSON.parse(text),
  };
}

export const get = (app: Express, url: string, headers?: Record<string, string>) => call(app, 'GET', url, headers);

/** Every schema in the document compiles (a malformed schema fails here, not silently). */
export function compileAllSchemas(): void {
  for (const name of Object.keys((doc.components as Json).schemas as Json)) validator(`/components/schemas/${name}`);
}

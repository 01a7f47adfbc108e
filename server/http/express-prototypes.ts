/**
 * Requests and responses born with the express app's prototypes.
 *
 * express's `app.handle` gives every request and response the app's prototypes
 * (`Object.setPrototypeOf(req, app.request)`, the same for res). Changing the
 * prototype of an object Node has just built costs V8 a new hidden class per
 * object, and every inline cache that saw the old shape (in Node's http code
 * and in express) goes megamorphic. When the server constructs them with those
 * prototypes already, express's call finds nothing to change.
 *
 * Measured (docs/performance/2026-11-24-v1.2.md, reference run 3, "Requests born with express's prototypes"): a one-route
 * express app answering from PostgreSQL went from ~0.6 to ~0.95 of the same
 * handler on node:http; the full server spent ~30 % less CPU per `bars/:id`.
 *
 * Node's IncomingMessage and ServerResponse are function constructors (Node 20
 * to 26); should one become a class, it cannot be called this way, and the
 * server is created as before.
 */
import type http from 'node:http';
import { IncomingMessage, ServerResponse } from 'node:http';

export interface ExpressPrototypes {
  /** `app.request`: inherits from http.IncomingMessage.prototype. */
  request: object;
  /** `app.response`: inherits from http.ServerResponse.prototype. */
  response: object;
}

/** An express application (it carries the prototypes its `handle` sets). */
export function hasExpressPrototypes(app: unknown): app is ExpressPrototypes {
  const a = app as Partial<ExpressPrototypes> | null | undefined;
  return (
    typeof a?.request === 'object' &&
    a.request instanceof IncomingMessage &&
    typeof a.response === 'object' &&
    a.response instanceof ServerResponse
  );
}

const isClass = (f: unknown) => /^class\b/.test(Function.prototype.toString.call(f));

type Callable = (this: unknown, ...args: unknown[]) => void;

/** The server options that make Node construct requests and responses with the app's prototypes. */
export function bornWithExpressPrototypes(
  app: ExpressPrototypes,
): Pick<http.ServerOptions, 'IncomingMessage' | 'ServerResponse'> {
  if (isClass(IncomingMessage) || isClass(ServerResponse)) return {};
  function PartnerRequest(this: unknown, socket: unknown) {
    (IncomingMessage as unknown as Callable).call(this, socket);
  }
  PartnerRequest.prototype = app.request;
  function PartnerResponse(this: unknown, req: unknown, options: unknown) {
    (ServerResponse as unknown as Callable).call(this, req, options);
  }
  PartnerResponse.prototype = app.response;
  return {
    IncomingMessage: PartnerRequest as unknown as typeof IncomingMessage,
    ServerResponse: PartnerResponse as unknown as typeof ServerResponse,
  };
}

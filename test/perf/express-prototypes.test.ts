/**
 * The partner server constructs requests and responses with the express app's
 * prototypes (server/http/express-prototypes.ts), so express's setPrototypeOf
 * changes nothing; express's helpers and Node's own answers work as before.
 */
import http from 'node:http';
import net, { type AddressInfo } from 'node:net';
import express from 'express';
import { createPartnerServer, type PartnerServer } from '../../server/http/server';
import { bornWithExpressPrototypes, hasExpressPrototypes } from '../../server/http/express-prototypes';

async function listen(app: http.RequestListener) {
  const server = createPartnerServer({ tls: undefined }, app);
  const seen: { req?: object | null; res?: object | null } = {};
  // Runs before the app: what Node constructed, before express touched it.
  server.prependListener('request', (req: http.IncomingMessage, res: http.ServerResponse) => {
    seen.req = Object.getPrototypeOf(req) as object;
    seen.res = Object.getPrototypeOf(res) as object;
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { server, seen, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
}

async function close(server: PartnerServer) {
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
}

describe('requests born with the express prototypes', () => {
  test('an express app: Node constructs req and res with app.request and app.response', async () => {
    const app = express();
    app.get('/x', (req, res) => {
      res.status(201).json({ host: req.get('host') !== undefined, q: req.query.a, secure: req.secure });
    });
    const { server, seen, url } = await listen(app);
    try {
      const r = await fetch(`${url}/x?a=1`);
      expect(r.status).toBe(201);
      expect(r.headers.get('content-type')).toMatch(/^application\/json/);
      expect(await r.json()).toEqual({ host: true, q: '1', secure: false });
      expect(seen.req).toBe(app.request);
      expect(seen.res).toBe(app.response);
    } finally {
      await close(server);
    }
  });

  test('responses written before express (a missing Host) still work', async () => {
    const app = express();
    app.get('/x', (_req, res) => void res.send('never'));
    const { server, url } = await listen(app);
    try {
      const port = new URL(url).port;
      const answer = await new Promise<string>((resolve, reject) => {
        const s = net.connect(Number(port), '127.0.0.1');
        let out = '';
        s.on('data', (c: Buffer) => (out += c.toString()));
        s.on('close', () => resolve(out));
        s.on('error', reject);
        s.write('GET /x HTTP/1.1\r\nConnection: close\r\n\r\n');
      });
      expect(answer).toMatch(/^HTTP\/1\.1 400 /);
      expect(answer).toMatch(/"error":"Malformed request: an HTTP\/1\.1 request needs a Host header"/);
    } finally {
      await close(server);
    }
  });

  test('a plain listener keeps Node’s own prototypes', async () => {
    const { server, seen, url } = await listen((_req, res) => res.end('ok'));
    try {
      expect(await (await fetch(url)).text()).toBe('ok');
      expect(seen.req).toBe(http.IncomingMessage.prototype);
      expect(seen.res).toBe(http.ServerResponse.prototype);
    } finally {
      await close(server);
    }
  });

  test('only an express app qualifies; the options construct instances of Node’s classes', () => {
    expect(hasExpressPrototypes((() => undefined) as http.RequestListener)).toBe(false);
    expect(hasExpressPrototypes({ request: {}, response: {} })).toBe(false);
    const app = express();
    expect(hasExpressPrototypes(app)).toBe(true);
    const { IncomingMessage: Req } = bornWithExpressPrototypes(app);
    const req = new Req!(new net.Socket());
    expect(req).toBeInstanceOf(http.IncomingMessage);
    expect(Object.getPrototypeOf(req)).toBe(app.request);
    expect(req.headers).toEqual({});
  });
});

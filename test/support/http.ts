/** Real listening servers for tests that need many concurrent requests (supertest starts a server per request). */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type express from 'express';

export interface Answer {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: string;
}

export interface Listening {
  port: number;
  get(path: string, headers?: Record<string, string>): Promise<Answer>;
  request(method: string, path: string, headers?: Record<string, string>): Promise<Answer>;
  close(): Promise<void>;
}

export async function listen(app: express.Express): Promise<Listening> {
  const server = http.createServer(app);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const agent = new http.Agent({ keepAlive: true, maxSockets: 64 });
  const request = (method: string, path: string, headers: Record<string, string> = {}) =>
    new Promise<Answer>((resolve, reject) => {
      const req = http.request({ method, host: '127.0.0.1', port, path, headers, agent }, (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (body += chunk));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
      });
      req.on('error', reject);
      req.end();
    });
  return {
    port,
    get: (path, headers = {}) => request('GET', path, headers),
    request,
    async close() {
      agent.destroy();
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

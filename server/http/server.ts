import fs from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import type { RequestListener } from 'node:http';
import type { Config } from '../config';

/** The partner listener: HTTPS when a certificate and key are configured, else plain HTTP (e.g. behind a TLS proxy). */
export function createPartnerServer(config: Pick<Config, 'tls'>, app: RequestListener): http.Server {
  if (!config.tls) return http.createServer(app);
  return https.createServer({
    cert: fs.readFileSync(config.tls.certFile),
    key: fs.readFileSync(config.tls.keyFile),
  }, app);
}

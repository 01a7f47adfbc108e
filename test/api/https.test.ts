/**
 * HTTPS: with a certificate the server speaks TLS itself and sends HSTS; plain
 * HTTP does not; behind a trusted proxy X-Forwarded-Proto: https counts as
 * HTTPS, from an untrusted one it does not.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import https from 'node:https';
import type http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { loadConfig } from '../../server/config';
import { createPartnerServer } from '../../server/http/server';
import { PARTNER_PREFIX as P } from '../../server/contract/identity';
import { createTestDatabase, type TestDatabase } from '../support/db';
import { get, validateResponse } from '../support/openapi';
import { buildApp } from '../support/partner-app';

describe('HTTPS and HSTS', () => {
  let db: TestDatabase;
  let dir: string;
  let tls: { certFile: string; keyFile: string };

  beforeAll(async () => {
    db = await createTestDatabase();
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'partner-tls-'));
    tls = { certFile: path.join(dir, 'cert.pem'), keyFile: path.join(dir, 'key.pem') };
    execFileSync(
      'openssl',
      [
        'req',
        '-x509',
        '-newkey',
        'ec',
        '-pkeyopt',
        'ec_paramgen_curve:prime256v1',
        '-nodes',
        '-keyout',
        tls.keyFile,
        '-out',
        tls.certFile,
        '-days',
        '1',
        '-subj',
        '/CN=localhost',
        '-addext',
        'subjectAltName=IP:127.0.0.1',
      ],
      { stdio: 'ignore' },
    );
  });
  afterAll(async () => {
    fs.rmSync(dir, { recursive: true, force: true });
    await db.drop();
  });

  const listen = (server: http.Server) =>
    new Promise<number>((resolve) => {
      server.listen(0, '127.0.0.1', () => resolve((server.address() as { port: number }).port));
    });

  test('TLS_CERT_FILE + TLS_KEY_FILE: the server speaks HTTPS and sends Strict-Transport-Security', async () => {
    const { app } = buildApp(db.partnerPool());
    const server = createPartnerServer({ tls }, app);
    const port = await listen(server);
    try {
      const url = `${P}/test_endpoint`;
      const res = await new Promise<{ status: number; headers: Record<string, string>; text: string }>(
        (resolve, reject) => {
          https
            .get({ host: '127.0.0.1', port, path: url, ca: fs.readFileSync(tls.certFile) }, (r) => {
              let text = '';
              r.on('data', (c: Buffer) => (text += c.toString()));
              r.on('end', () => resolve({ status: r.statusCode!, headers: r.headers as Record<string, string>, text }));
            })
            .on('error', reject);
        },
      );
      validateResponse('GET', url, res);
      expect(res.status).toBe(200);
      expect(res.headers['strict-transport-security']).toBe('max-age=31536000; includeSubDomains');
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });

  test('plain HTTP sends no HSTS, and X-Forwarded-Proto from an untrusted client changes nothing', async () => {
    const { app } = buildApp(db.partnerPool());
    expect((await get(app, `${P}/test_endpoint`)).headers['strict-transport-security']).toBeUndefined();
    const spoofed = await get(app, `${P}/test_endpoint`, { 'X-Forwarded-Proto': 'https' });
    expect(spoofed.headers['strict-transport-security']).toBeUndefined();
  });

  test('TRUST_PROXY: X-Forwarded-Proto: https from the proxy counts as HTTPS (errors too)', async () => {
    const { app } = buildApp(db.partnerPool(), { trustProxy: 'loopback' });
    const res = await get(app, `${P}/test_endpoint`, { 'X-Forwarded-Proto': 'https' });
    expect(res.headers['strict-transport-security']).toBe('max-age=31536000; includeSubDomains');
    const notFound = await get(app, '/nothing', { 'X-Forwarded-Proto': 'https' });
    expect(notFound.status).toBe(404);
    expect(notFound.headers['strict-transport-security']).toBeDefined();
    expect(
      (await get(app, `${P}/test_endpoint`, { 'X-Forwarded-Proto': 'http' })).headers['strict-transport-security'],
    ).toBeUndefined();
  });

  test('configuration: both TLS files or neither; TRUST_PROXY forms', () => {
    expect(loadConfig({ TLS_CERT_FILE: '/c.pem', TLS_KEY_FILE: '/k.pem' }).tls).toEqual({
      certFile: '/c.pem',
      keyFile: '/k.pem',
    });
    expect(loadConfig({}).tls).toBeUndefined();
    expect(() => loadConfig({ TLS_CERT_FILE: '/c.pem' })).toThrow(
      'TLS_CERT_FILE and TLS_KEY_FILE must be set together',
    );
    expect(loadConfig({}).trustProxy).toBe(false);
    expect(loadConfig({ TRUST_PROXY: 'true' }).trustProxy).toBe(true);
    expect(loadConfig({ TRUST_PROXY: '1' }).trustProxy).toBe(1);
    expect(loadConfig({ TRUST_PROXY: 'loopback, 10.0.0.0/8' }).trustProxy).toBe('loopback, 10.0.0.0/8');
  });
});

import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { attemptDelivery } from '../../server/webhooks/deliver';
import { generateSecret, signedHeaders, verify } from '../../server/webhooks/signing';

const open = { allowHttp: true, allowPrivate: true };

describe('one webhook delivery attempt against a local receiver', () => {
  let server: http.Server;
  let url: string;
  const seen: { headers: http.IncomingHttpHeaders; body: string }[] = [];
  let answers: number[] = [];
  let hang = false;

  beforeAll(async () => {
    server = http.createServer((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString()));
      req.on('end', () => {
        seen.push({ headers: req.headers, body });
        if (hang) return;
        res.statusCode = answers.shift() ?? 200;
        res.end('ok');
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    url = `http://localhost:${(server.address() as AddressInfo).port}/hook`;
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  });

  test('500 then 200: both attempts carry the same webhook-id and a valid signature', async () => {
    const secret = generateSecret();
    const body = JSON.stringify({ type: 'usage.alert', data: { level: 'warning' } });
    answers = [500, 200];
    seen.length = 0;
    const first = await attemptDelivery(url, { ...signedHeaders(secret, 'evt_a', body) }, body, open);
    const second = await attemptDelivery(url, { ...signedHeaders(secret, 'evt_a', body) }, body, open);
    expect([first.ok, first.status, second.ok, second.status]).toEqual([false, 500, true, 200]);
    expect(seen.map((s) => s.headers['webhook-id'])).toEqual(['evt_a', 'evt_a']);
    for (const s of seen) {
      expect(s.body).toBe(body);
      const ts = Number(s.headers['webhook-timestamp']);
      expect(verify(secret, 'evt_a', ts, s.body, String(s.headers['webhook-signature']))).toBe(true);
    }
  });

  test('loopback refused without WEBHOOK_ALLOW_PRIVATE, and nothing is sent', async () => {
    seen.length = 0;
    const r = await attemptDelivery(url, {}, '{}', { allowHttp: true, allowPrivate: false });
    expect(r).toMatchObject({ ok: false, status: null });
    expect(r.error).toMatch(/refused: .*non-public/);
    expect(seen).toHaveLength(0);
  });

  test('a receiver that does not answer times out', async () => {
    hang = true;
    const r = await attemptDelivery(url, {}, '{}', open, 300);
    hang = false;
    expect(r.ok).toBe(false);
    expect(r.error).toMatch(/timeout|socket hang up/);
    expect(r.durationMs).toBeLessThan(5000);
  });

  test('a receiver that never answers, the runner stopping: the attempt is abandoned when the signal aborts', async () => {
    hang = true;
    const stop = new AbortController();
    setTimeout(() => stop.abort(), 200);
    const r = await attemptDelivery(url, {}, '{}', open, 10_000, stop.signal);
    hang = false;
    expect(r).toMatchObject({
      ok: false,
      status: null,
      error: 'abandoned: the server was shutting down; retried later',
    });
    expect(r.durationMs).toBeGreaterThanOrEqual(190);
    expect(r.durationMs).toBeLessThan(2000);
    // Aborted before it starts: not sent at all.
    const before = seen.length;
    const aborted = await attemptDelivery(url, {}, '{}', open, 10_000, AbortSignal.abort());
    expect(aborted).toMatchObject({ ok: false, error: 'abandoned: the server was shutting down; retried later' });
    expect(seen.length).toBe(before);
  });
});

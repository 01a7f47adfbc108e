/**
 * The rate-limit headers precomputed per key and window (limiters.ts windowHeaders) are exactly
 * those the per-answer computation wrote before: for every mix of limited and unlimited buckets,
 * counts up to the refusal, the 429 included. Reference: that computation, kept here.
 */
import { createHash } from 'node:crypto';
import express from 'express';
import request from 'supertest';
import { PartnerRateLimits, type PlanLimits } from '../../server/ratelimit/limiters';
import { windowsAt } from '../../server/ratelimit/buckets';
import { BUCKETS, NOMINAL_WINDOW_MS } from '../../server/ratelimit/windows';
import { awaitRoomInMinute, silentLogger } from '../support/partner';

/** The headers as limiters.ts wrote them before the precomputation (t= left out: it is the instant's). */
function reference(keyId: string, limits: PlanLimits, used: Record<string, number>, now: number) {
  const w = windowsAt(now);
  const triples = Object.fromEntries(
    BUCKETS.map((b) => {
      const limit = limits[b];
      const reset = Math.ceil(w.end[b] / 1000);
      return [
        b,
        limit === null
          ? { limit: -1, remaining: -1, reset }
          : { limit, remaining: Math.max(0, limit - used[b]!), reset },
      ];
    }),
  );
  let general = triples.minute!;
  let fewest = Infinity;
  for (const b of BUCKETS) {
    const t = triples[b]!;
    if (t.limit !== -1 && t.remaining < fewest) {
      fewest = t.remaining;
      general = t;
    }
  }
  const h: Record<string, string> = {};
  for (const [suffix, t] of [
    ['', general],
    ['-minute', triples.minute!],
    ['-day', triples.day!],
    ['-month', triples.month!],
  ] as const) {
    h[`x-ratelimit-limit${suffix}`] = String(t.limit);
    h[`x-ratelimit-remaining${suffix}`] = String(t.remaining);
    h[`x-ratelimit-reset${suffix}`] = String(t.reset);
  }
  const rl: string[] = [];
  const policy: string[] = [];
  for (const b of BUCKETS) {
    const t = triples[b]!;
    if (t.limit === -1) continue;
    const pk = Buffer.from(createHash('sha256').update(`${w.start[b]}:${keyId}`).digest('hex').slice(0, 12)).toString(
      'base64',
    );
    rl.push(`"${b}"; r=${t.remaining}; t=`);
    policy.push(`"${b}"; q=${t.limit}; w=${Math.ceil(NOMINAL_WINDOW_MS[b] / 1000)}; pk=:${pk}:`);
  }
  if (rl.length) {
    h.ratelimit = rl.join(', ');
    h['ratelimit-policy'] = policy.join(', ');
  }
  return h;
}

const NAMES = /^(x-ratelimit-|ratelimit)/;

describe('rate-limit headers precomputed per window', () => {
  const limiter = new PartnerRateLimits({
    redisPrefix: 'hdr:',
    logger: silentLogger,
    endpointOf: () => 'test_endpoint',
  });
  afterAll(() => limiter.close());

  test.each<[string, PlanLimits]>([
    ['three limited buckets', { minute: 3, day: 5, month: 100 }],
    ['the day the tightest', { minute: 10, day: 2, month: 100 }],
    ['minute only', { minute: 2, day: null, month: null }],
    ['month only', { minute: null, day: null, month: 3 }],
    ['unlimited', { minute: null, day: null, month: null }],
  ])('%s: every header as before, 429 included', async (name, limits) => {
    await awaitRoomInMinute(3000); // the counts and windows of one minute
    const keyId = `key-${name.replace(/\W/g, '')}`;
    const app = express();
    app.use(
      (_req, res, next) => {
        res.locals.rateLimit = { keyId, limits };
        next();
      },
      ...limiter.handlers,
    );
    app.get('/x', (_req, res) => void res.json({ ok: true }));
    let served = 0;
    for (let i = 0; i < 5; i++) {
      const res = await request(app).get('/x');
      if (res.status === 200) served++;
      const used = Object.fromEntries(BUCKETS.map((b) => [b, limits[b] === null ? 0 : served]));
      const want = reference(keyId, limits, used, Date.now());
      const got = Object.fromEntries(
        Object.entries(res.headers)
          .filter(([k]) => NAMES.test(k))
          .map(([k, v]) => [k, k === 'ratelimit' ? String(v).replace(/t=\d+/g, 't=') : String(v)]),
      );
      expect(got).toEqual(want);
    }
    const tightest = Math.min(...BUCKETS.map((b) => limits[b] ?? Infinity));
    expect(served).toBe(Math.min(5, tightest));
  });
});

/**
 * The bench's 4xx-flood phase (bench/log-flood.ts), its pure parts: the
 * options, how long the flood lasts (two whole UTC minutes whatever second it
 * starts at) and the /metrics counters it reads.
 */
import { parseBenchArgs } from '../../bench/args';
import { byReason, floodSeconds, wholeMinute } from '../../bench/log-flood';

describe('bench --log-flood options', () => {
  test('off by default; --log-flood adds it; --log-flood-only runs it alone; rate 2,000 unless given', () => {
    const plain = parseBenchArgs([], {});
    expect([plain.logFlood, plain.logFloodOnly, plain.logFloodRate, plain.flood, plain.http]).toEqual([
      false,
      false,
      2000,
      true,
      true,
    ]);
    expect(parseBenchArgs(['--log-flood'], {}).logFlood).toBe(true);
    const only = parseBenchArgs(['--log-flood-only', '--log-flood-rate', '500'], {});
    expect(only).toMatchObject({ logFlood: true, logFloodRate: 500, flood: false, http: false, db: false });
    expect(only).toMatchObject({ ratio: false, explain: false, pgbench: false });
    // each "only" keeps its own phase
    expect(parseBenchArgs(['--flood-only', '--log-flood'], {})).toMatchObject({ flood: true, logFlood: false });
    expect(parseBenchArgs(['--flood-only', '--log-flood-only'], {})).toMatchObject({ flood: true, logFlood: true });
  });

  test('the server logs errors unless --log-flood-request-log says otherwise (off: the control run)', () => {
    expect(parseBenchArgs([], {}).logFloodRequestLog).toBe('errors');
    expect(parseBenchArgs(['--log-flood-request-log', 'off'], {}).logFloodRequestLog).toBe('off');
    expect(parseBenchArgs(['--log-flood-request-log=all'], {}).logFloodRequestLog).toBe('all');
    expect(() => parseBenchArgs(['--log-flood-request-log', 'none'], {})).toThrow(
      /--log-flood-request-log must be errors, all or off \(got none\)/,
    );
  });

  test('the 429 flood: 10,000 req/s over 50 connections unless given', () => {
    expect(parseBenchArgs([], {})).toMatchObject({ floodRate: 10_000, floodConnections: 50 });
    expect(parseBenchArgs(['--flood-connections', '2000'], {}).floodConnections).toBe(2000);
    expect(() => parseBenchArgs(['--flood-connections=0'], {})).toThrow(
      /--flood-connections must be a positive number/,
    );
  });

  test.each(['0', '-5', 'fast'])('--log-flood-rate %s: refused naming the option', (rate) => {
    expect(() => parseBenchArgs([`--log-flood-rate=${rate}`], {})).toThrow(
      /--log-flood-rate must be a positive number/,
    );
  });
});

describe('the flood covers two whole UTC minutes', () => {
  const minute = Date.parse('2026-11-25T15:30:00Z');

  test.each([0, 1, 2.999, 3, 17.5, 30, 56.999, 57, 59.999])('started %s s into a minute', (s) => {
    const start = minute + s * 1000;
    const seconds = floodSeconds(start, 10);
    const whole = Array.from({ length: 5 }, (_, i) => minute + i * 60_000).filter((m) =>
      wholeMinute(m, start, seconds),
    );
    expect(whole).toHaveLength(2);
    expect(seconds).toBeGreaterThanOrEqual(121);
    expect(seconds).toBeLessThanOrEqual(184);
  });

  test('longer when the measured runs need longer', () => {
    expect(floodSeconds(minute + 30_000, 300)).toBe(307);
  });
});

test('byReason: counters by reason, summed over instances; unlabelled as ""', () => {
  const text = [
    '# TYPE partner_request_log_capped_total counter',
    'partner_request_log_capped_total{reason="minute_cap",worker="1"} 1500',
    'partner_request_log_capped_total{reason="minute_cap",worker="2"} 20',
    'partner_request_log_capped_total{reason="repeat_429"} 3',
    'partner_request_log_capped_totals{reason="minute_cap"} 99',
    'partner_request_log_written_total 1007',
  ].join('\n');
  expect(byReason(text, 'partner_request_log_capped_total')).toEqual({ minute_cap: 1520, repeat_429: 3 });
  expect(byReason(text, 'partner_request_log_written_total')).toEqual({ '': 1007 });
  expect(byReason(text, 'partner_request_log_dropped_total')).toEqual({});
});

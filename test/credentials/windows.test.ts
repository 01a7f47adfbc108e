/**
 * windowsAt (ratelimit/buckets.ts) builds a minute's windows once: every instant of that minute gets
 * the same frozen windows, equal to a recomputation from windowStart/windowEnd; the next minute, the
 * day and the month change at their boundaries; an instant of an earlier minute gets its own windows
 * and leaves the current ones in place.
 */
import { windowsAt } from '../../server/ratelimit/buckets';
import { BUCKETS, windowEnd, windowStart } from '../../server/ratelimit/windows';

function recomputed(now: number) {
  const start = Object.fromEntries(BUCKETS.map((b) => [b, windowStart(b, now)]));
  const end = Object.fromEntries(BUCKETS.map((b) => [b, windowEnd(b, windowStart(b, now))]));
  return { start, end, day: new Date(now).toISOString().slice(0, 10) };
}

describe('windowsAt', () => {
  test('one frozen value per minute, equal to a recomputation, across the minute, day and month ends', () => {
    const lastMs = Date.parse('2026-12-31T23:59:00.000Z');
    const first = windowsAt(lastMs);
    expect(first).toEqual(recomputed(lastMs));
    expect(Object.isFrozen(first) && Object.isFrozen(first.start) && Object.isFrozen(first.end)).toBe(true);
    const later = windowsAt(lastMs + 59_999); // 23:59:59.999, the same minute
    expect(later).toBe(first);
    expect(first.end.month).toBe(Date.parse('2027-01-01T00:00:00.000Z'));
    const next = windowsAt(lastMs + 60_000); // 2027-01-01T00:00:00.000Z: a new minute, day and month
    expect(next).not.toBe(first);
    expect(next).toEqual(recomputed(lastMs + 60_000));
    expect(next.start).toEqual({
      minute: Date.parse('2027-01-01T00:00:00.000Z'),
      day: Date.parse('2027-01-01T00:00:00.000Z'),
      month: Date.parse('2027-01-01T00:00:00.000Z'),
    });
    expect(next.day).toBe('2027-01-01');
  });

  test('an earlier minute gets its own windows and does not replace the current ones', () => {
    const now = Date.parse('2027-02-28T12:34:56.789Z');
    const current = windowsAt(now);
    const earlier = windowsAt(now - 3_600_000);
    expect(earlier).toEqual(recomputed(now - 3_600_000));
    expect(windowsAt(now + 1)).toBe(current);
    expect(current.end.month).toBe(Date.parse('2027-03-01T00:00:00.000Z'));
  });
});

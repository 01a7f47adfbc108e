/**
 * bench/usage-path-cost.ts measures the real request-log middleware and HourlyUsage.record (no
 * timing is asserted: what is checked is that the "with" loop ran the real work, exactly once per
 * answer, and the "without" loop none of it).
 */
import { addedPerAnswerUs, measureUsagePathCost } from '../../bench/usage-path-cost';

describe('bench/usage-path-cost', () => {
  test('the "with" rounds count every answer once in the hourly push; 200s leave no request-log entry', async () => {
    const answers = 1000;
    const rounds = 3;
    const cost = await measureUsagePathCost({
      redisUrl: process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379',
      answers,
      rounds,
      pushes: 5,
    });
    expect(cost.withUs).toHaveLength(rounds);
    expect(cost.withoutUs).toHaveLength(rounds);
    // one warm-up round and `rounds` measured rounds with the work
    expect(cost.pushedFields).toBe(answers * (rounds + 1));
    expect(cost.logged).toBe(0);
    for (const us of [...cost.withUs, ...cost.withoutUs, cost.pushUs, cost.flushUs])
      expect(Number.isFinite(us) && us >= 0).toBe(true);
  });

  test('the per-second work is shared out over the answers of that second', () => {
    expect(addedPerAnswerUs({ addedUs: 1, pushUs: 200, flushUs: 50 }, 1000)).toBeCloseTo(1 + 2050 / 1000);
    expect(addedPerAnswerUs({ addedUs: 1, pushUs: 200, flushUs: 50 }, 100)).toBeCloseTo(1 + 20.5);
  });
});

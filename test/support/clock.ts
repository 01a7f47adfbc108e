/**
 * The instant the tests' answers are computed at. No test depends on the hour
 * it runs at: the partner apps the tests build take this clock, spawned servers
 * get it as TEST_CLOCK, and demo data is seeded around it. `.ci/run` runs the
 * suite under several clocks (TEST_CLOCK); unset, the default below.
 *
 * Redis keeps real time: a rate-limit window or a usage hash written there
 * expires at an absolute instant that Redis compares with its own clock, so
 * such values come from Date.now(), never from this clock or a fixed date (a
 * usage hash of a fixed day in the past expired at once: bench/usage-path-cost).
 * (scripts/suite-ahead.sh moves PostgreSQL's and Node's real clock ahead to find a test that mixes a
 * fixed date with them; Redis keeps real time there, so it cannot find this kind.)
 */
import { fixedClock, parseTestClock, type Clock } from '../../server/clock';

/** 10:30 in New York, 07:30 in Los Angeles: the hours the demo data once had no open bar. */
export const DEFAULT_TEST_CLOCK = '2026-11-25T15:30:00Z';

/** TEST_CLOCK, or the default; global-setup.ts sets TEST_CLOCK so every worker and child process agrees. */
export function testNow(): Date {
  return parseTestClock(process.env.TEST_CLOCK) ?? new Date(DEFAULT_TEST_CLOCK);
}

export const testClock: Clock = fixedClock(testNow());

/**
 * The instant partner answers are computed at: open now, busiest bars, events
 * today, a city's local date. Every api.* function that depends on it takes it
 * as `p_now`, and the server passes `clock()`; the database's own now() is
 * never what an answer depends on. Production runs on the system clock. Tests
 * fix it (TEST_CLOCK, refused in production), so no answer depends on the hour
 * a suite runs at. Rate-limit windows, usage days and logs keep real time.
 */
export type Clock = () => Date;

export const systemClock: Clock = () => new Date();

/** A clock stopped at `instant`. */
export function fixedClock(instant: Date): Clock {
  const ms = instant.getTime();
  return () => new Date(ms);
}

/** TEST_CLOCK: an ISO 8601 instant with its offset (e.g. 2026-11-25T15:30:00Z); unset → undefined. */
export function parseTestClock(raw: string | undefined): Date | undefined {
  if (raw === undefined || raw === '') return undefined;
  const ok = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,3})?)?(Z|[+-]\d{2}:\d{2})$/.test(raw);
  const instant = new Date(raw);
  if (!ok || Number.isNaN(instant.getTime()))
    throw new Error(`TEST_CLOCK must be an ISO 8601 instant with an offset (e.g. 2026-11-25T15:30:00Z), got "${raw}"`);
  return instant;
}

/** The clock a server answers by: TEST_CLOCK's fixed instant when set (tests), otherwise the system clock. */
export function answerClock(config: { testClock: Date | undefined }): Clock {
  return config.testClock ? fixedClock(config.testClock) : systemClock;
}

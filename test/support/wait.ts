/**
 * Waiting for a state the test cannot be told about (a backend's exit, a replica catching up, a
 * periodic flush, a circuit closing): how long it takes is the machine's business, so a test polls
 * for the state itself, within a bound far above the time it takes on a loaded machine.
 */
import { setTimeout as sleep } from 'node:timers/promises';

export { sleep };

/** Polls `check` every `intervalMs` until it holds (true) or `timeoutMs` has passed (false). */
export async function waitFor(
  check: () => boolean | Promise<boolean>,
  timeoutMs: number,
  intervalMs = 50,
): Promise<boolean> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    if (await check()) return true;
    if (Date.now() > until) return false;
    await sleep(intervalMs);
  }
}

/**
 * The bench measures a started server (bench/servers.ts settled): it waits
 * until the server's start-up work is done, read from its CPU, not a clock.
 */
import { settled } from '../../bench/servers';

/** CPU readings in turn (the last one repeated), and a sleep that only counts. */
function script(readings: (number | undefined)[]) {
  let i = 0;
  const slept: number[] = [];
  return {
    readCpu: () => readings[Math.min(i++, readings.length - 1)],
    sleep: async (ms: number) => void slept.push(ms),
    slept,
  };
}

describe('bench settled', () => {
  test('waits out the busy windows, then returns after two quiet ones in a row', async () => {
    // 0.45 s of CPU a half second (busy), twice; then 0.01 (quiet), a busy one again, two quiet
    const s = script([0, 0.45, 0.9, 0.91, 1.3, 1.31, 1.32]);
    expect(await settled(s.readCpu, {}, s.sleep)).toBe(3_000);
    expect(s.slept).toEqual([500, 500, 500, 500, 500, 500]);
  });

  test('quiet means below the idle share of a core over a window: at it is busy', async () => {
    // 10 % of a core over 500 ms is 0.05 s: one window at exactly that, then two below
    const s = script([0, 0.05, 0.09, 0.13]);
    expect(await settled(s.readCpu, {}, s.sleep)).toBe(1_500);
    const t = script([0, 0.01, 0.02]);
    expect(await settled(t.readCpu, { windowMs: 250, idleShare: 0.05, quietWindows: 2 }, t.sleep)).toBe(500);
  });

  test('a process that never settles: undefined after the timeout, not a hang', async () => {
    let cpu = 0;
    const slept: number[] = [];
    const waited = await settled(
      () => (cpu += 0.5),
      { timeoutMs: 5_000 },
      async (ms) => void slept.push(ms),
    );
    expect(waited).toBeUndefined();
    expect(slept.reduce((a, b) => a + b, 0)).toBe(5_000);
  });

  test('no CPU to read (not Linux, or the process is gone): undefined at once or at that reading', async () => {
    const none = script([undefined]);
    expect(await settled(none.readCpu, {}, none.sleep)).toBeUndefined();
    expect(none.slept).toEqual([]);
    const gone = script([0, 0.4, undefined]);
    expect(await settled(gone.readCpu, {}, gone.sleep)).toBeUndefined();
    expect(gone.slept).toHaveLength(2);
  });
});

import { gcSeconds } from '../../bench/gc-trace';

const line = (ms: number, c: Record<string, unknown>) => `[7441:0x1d646000:0]   ${ms} ms: GC: ${JSON.stringify(c)}`;

describe('gcSeconds (bench/gc-trace.ts): a --trace-gc-nvp log summed per second', () => {
  test('scavenges, promoted and survived bytes, pauses and mark-compacts, by second; other lines ignored', () => {
    const log = [
      line(1200, {
        gc: 's',
        pause: 1.5,
        promoted: 2_000_000,
        new_space_survived: 2_500_000,
        'background.scavenge.parallel': 3,
      }),
      '[7441:0x1d646000:0]       50 ms: Memory pool: Removed pages: 0, removed large pages: 0',
      line(1900, {
        gc: 's',
        pause: 2.5,
        promoted: 1_000_000,
        new_space_survived: 1_500_000,
        'background.scavenge.parallel': 1,
      }),
      line(2100, { gc: 'mc', pause: 10 }),
      line(2300, { gc: 's', pause: 1, promoted: 0, new_space_survived: 500_000 }),
      'not a gc line',
    ].join('\n');
    expect(gcSeconds(log)).toEqual([
      {
        second: 1,
        scavenges: 2,
        promotedMB: 3,
        survivedMB: 4,
        scavengePauseMs: 4,
        scavengeHelpersMs: 4,
        markCompacts: 0,
        markCompactPauseMs: 0,
      },
      {
        second: 2,
        scavenges: 1,
        promotedMB: 0,
        survivedMB: 0.5,
        scavengePauseMs: 1,
        scavengeHelpersMs: 0,
        markCompacts: 1,
        markCompactPauseMs: 10,
      },
    ]);
  });

  test('a log without such lines: nothing', () => {
    expect(gcSeconds('server listening\n{"level":30}')).toEqual([]);
  });
});

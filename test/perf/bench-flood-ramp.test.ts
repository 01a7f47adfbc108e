/**
 * The 429-flood phase's ramp (bench/flood.ts whileFlooding): the measured run starts only once the flood has
 * run its ramp, the flood is asked to last past the run's end, and a flood that fails fails the phase.
 */
import { FLOOD_RAMP_MS, floodSecondsAround, whileFlooding } from '../../bench/flood';

describe('bench flood ramp', () => {
  beforeEach(() => jest.useFakeTimers());
  afterEach(() => jest.useRealTimers());

  test('the run starts after the ramp; the flood lasts the ramp, the run and a tail', async () => {
    let started = 0;
    let finishFlood!: (v: string) => void;
    const startFlood = () => {
      started++;
      return new Promise<string>((r) => (finishFlood = r));
    };
    const measure = jest.fn(async () => 'run');
    const phase = whileFlooding(startFlood, measure, 500);
    expect(started).toBe(1);
    expect(floodSecondsAround(10, 500)).toBeGreaterThan(10 + 0.5); // the measured 10 s, the ramp and a tail
    await jest.advanceTimersByTimeAsync(499);
    expect(measure).not.toHaveBeenCalled();
    await jest.advanceTimersByTimeAsync(1);
    expect(measure).toHaveBeenCalledTimes(1);
    finishFlood('flood');
    await expect(phase).resolves.toEqual(['run', 'flood']);
  });

  test('a failed flood fails the phase after the run (the default ramp)', async () => {
    const measure = jest.fn(async () => 'run');
    const phase = whileFlooding(() => Promise.reject(new Error('flood client exited 1 without a result')), measure);
    const settled = phase.then(
      () => 'resolved',
      (e: Error) => e.message,
    );
    await jest.advanceTimersByTimeAsync(FLOOD_RAMP_MS);
    expect(measure).toHaveBeenCalledTimes(1); // no unhandled rejection meanwhile: the run still happened
    await expect(settled).resolves.toBe('flood client exited 1 without a result');
  });
});

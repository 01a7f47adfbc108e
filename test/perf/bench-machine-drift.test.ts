/**
 * The bench's yardsticks at its end against its start (bench/environment.ts
 * machineDrift): a run during which the machine changed says so.
 */
import { DRIFT_TOLERANCE, driftReport, machineDrift } from '../../bench/machine-drift';

describe('bench machine drift', () => {
  test('a steady machine: every change within tolerance, signed against the start', () => {
    const drift = machineDrift(
      { cpu: 1_835, loopback: 134_800, pgbench: 16_659 },
      { cpu: 1_881, loopback: 120_000, pgbench: 20_381 },
    );
    expect(drift.map((d) => d.name)).toEqual(['cpu', 'loopback', 'pgbench']);
    expect(drift.map((d) => d.beyondTolerance)).toEqual([false, false, false]);
    expect(drift[0]!.change).toBeCloseTo(46 / 1_835, 6);
    expect(drift[1]!.change).toBeCloseTo(-14_800 / 134_800, 6);
    expect(drift[2]).toMatchObject({ start: 16_659, end: 20_381 });
  });

  test("machine T's hour: its CPU (−10.2 %), loopback (−27 %) and pgbench (−73 %) are each beyond", () => {
    const drift = machineDrift(
      { cpu: 1_881, loopback: 143_185, pgbench: 18_359 },
      { cpu: 1_690, loopback: 104_482, pgbench: 4_911 },
    );
    const beyond = Object.fromEntries(drift.map((d) => [d.name, d.beyondTolerance]));
    expect(beyond).toEqual({ cpu: true, loopback: true, pgbench: true });
    expect(drift.find((d) => d.name === 'pgbench')!.change).toBeCloseTo(4_911 / 18_359 - 1, 6);
  });

  test('each tolerance is a bound in both directions, not reached at its edge', () => {
    for (const [name, tolerance] of Object.entries(DRIFT_TOLERANCE)) {
      const start = { cpu: 1_000, loopback: 1_000, pgbench: 1_000 };
      const at = (factor: number) =>
        machineDrift(start, { ...start, [name]: 1_000 * factor }).find((d) => d.name === name)!.beyondTolerance;
      expect([at(1 + tolerance), at(1 - tolerance)]).toEqual([false, false]);
      expect([at(1 + tolerance + 0.01), at(1 - tolerance - 0.01)]).toEqual([true, true]);
    }
  });

  test('a yardstick measured on one side only (no pgbench at the start, or it failed at the end) is left out', () => {
    expect(
      machineDrift({ cpu: 1_500, loopback: 50_000 }, { cpu: 1_400, loopback: 60_000, pgbench: 9_000 }),
    ).toHaveLength(2);
    expect(
      machineDrift({ cpu: 1_500, loopback: 50_000, pgbench: 9_000 }, { cpu: 1_400, loopback: 60_000 }).map(
        (d) => d.name,
      ),
    ).toEqual(['cpu', 'loopback']);
    expect(machineDrift({ cpu: 0, loopback: 50_000 }, { cpu: 1_400, loopback: NaN })).toEqual([]);
  });

  test('the report: one row per yardstick with its signed change, and a verdict naming what moved', () => {
    const steady = driftReport(machineDrift({ cpu: 1_966, loopback: 72_076 }, { cpu: 1_990, loopback: 79_738 }));
    expect(steady).toContain('| CPU yardstick (MB/s) | 1,966 | 1,990 | +1 % |');
    expect(steady).toContain('| loopback yardstick (round trips/s) | 72,076 | 79,738 | +11 % |');
    expect(steady).not.toContain('| pgbench');
    expect(steady.split('\n').at(-1)).toMatch(/^The machine stayed within tolerance/);

    const moved = driftReport(
      machineDrift(
        { cpu: 1_881, loopback: 140_000, pgbench: 18_359 },
        { cpu: 1_850, loopback: 139_000, pgbench: 4_911 },
      ),
    );
    expect(moved).toContain('| pgbench `api.bar` (TPS; at the end one 10-s run) | 18,359 | 4,911 | −73 % |');
    expect(moved.split('\n').at(-1)).toMatch(/^\*\*The machine changed during the run\*\* \(pgbench −73 %;/);
    expect(moved).not.toMatch(/\(cpu|, cpu|loopback −/);
  });
});

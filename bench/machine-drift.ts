/**
 * The machine at a bench run's end against its start. A machine can be given
 * less CPU, or have its page cache reclaimed, within the hour (machine T,
 * docs/performance/2026-11-27-v1.3.md): then a run's figures are not of one
 * machine, and the run says so after its last phase.
 */
import { cpuYardstick, loopbackYardstick, pgbenchBar } from './environment';
import { table } from './markdown';

/** The machine's yardsticks at one moment: CPU (MB/s), loopback (round trips/s), pgbench `api.bar` (TPS). */
export interface Yardsticks {
  cpu: number;
  loopback: number;
  pgbench?: number;
}

/**
 * How far each yardstick may move between a run's start and its end before the run is said to have
 * measured two machines: CPU 10 % (best of 3; steady within a few per cent on one machine), loopback
 * and pgbench 25 % (their run-to-run spread on a steady machine reaches about 20 %).
 */
export const DRIFT_TOLERANCE: Readonly<Record<keyof Yardsticks, number>> = { cpu: 0.1, loopback: 0.25, pgbench: 0.25 };

export interface YardstickDrift {
  name: keyof Yardsticks;
  start: number;
  end: number;
  /** (end − start) / start */
  change: number;
  beyondTolerance: boolean;
}

/**
 * The yardsticks at a run's end against its start (a machine can be given less CPU, or have its
 * page cache reclaimed, within the hour). Yardsticks missing on either side are left out.
 */
export function machineDrift(start: Yardsticks, end: Yardsticks): YardstickDrift[] {
  return (Object.keys(DRIFT_TOLERANCE) as (keyof Yardsticks)[]).flatMap((name) => {
    const a = start[name];
    const b = end[name];
    if (a === undefined || b === undefined || !(a > 0) || !Number.isFinite(b)) return [];
    const change = (b - a) / a;
    return [{ name, start: a, end: b, change, beyondTolerance: Math.abs(change) > DRIFT_TOLERANCE[name] }];
  });
}

const NAMES: Record<keyof Yardsticks, string> = {
  cpu: 'CPU yardstick (MB/s)',
  loopback: 'loopback yardstick (round trips/s)',
  pgbench: 'pgbench `api.bar` (TPS; at the end one 10-s run)',
};

const percent = (x: number) => `${x >= 0 ? '+' : '−'}${Math.abs(x * 100).toFixed(0)} %`;

/** The drift as markdown: a table of start, end and change, and a verdict line. */
export function driftReport(drift: YardstickDrift[]): string {
  const rows = drift.map((d) => [
    NAMES[d.name],
    Math.round(d.start).toLocaleString('en-US'),
    Math.round(d.end).toLocaleString('en-US'),
    percent(d.change),
  ]);
  const tolerance = 'tolerance: CPU ±10 %, loopback and pgbench ±25 %';
  const moved = drift.filter((d) => d.beyondTolerance);
  const verdict = moved.length
    ? `**The machine changed during the run** (${moved.map((d) => `${d.name} ${percent(d.change)}`).join(', ')}; ${tolerance}): its figures are not of one machine.`
    : `The machine stayed within tolerance (${tolerance}).`;
  return `${table(['yardstick', 'start', 'end', 'change'], rows)}\n\n${verdict}`;
}

/** The yardsticks again (pgbench only when the start has one), printed against the start. */
export async function machineAtEnd(databaseUrl: string, bars: number, atStart: Yardsticks) {
  const pgbench = atStart.pgbench === undefined ? undefined : pgbenchBar(databaseUrl, bars, 10);
  const atEnd: Yardsticks = { cpu: cpuYardstick(), loopback: await loopbackYardstick(), pgbench };
  const drift = machineDrift(atStart, atEnd);
  console.log(`\n## The machine at the end against its start\n\n${driftReport(drift)}`);
  return { atStart, atEnd, drift };
}

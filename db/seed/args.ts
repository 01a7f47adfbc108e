/** Command line of `npm run db:seed -- --bars N [--seed S] [--reset]`. */
import { parseArgs } from 'node:util';
import { maxBars } from './index';

export interface SeedArgs {
  bars: number;
  seed: number;
  reset: boolean;
}

export const usage = 'usage: npm run db:seed -- [--bars N] [--seed S] [--reset]';

function integer(name: string, raw: string, min: number, max: number): number {
  if (!/^\d+$/.test(raw) || Number(raw) < min || Number(raw) > max) {
    throw new Error(`--${name} must be an integer from ${min} to ${max}, got "${raw}"`);
  }
  return Number(raw);
}

/** Throws an Error with a one-line message on anything it does not understand. */
export function parseSeedArgs(argv: string[], defaultBars: number): SeedArgs {
  const { values, positionals } = parseArgs({
    args: argv,
    options: { bars: { type: 'string' }, seed: { type: 'string' }, reset: { type: 'boolean' } },
    allowPositionals: true,
    strict: true,
  });
  if (positionals.length > 0) throw new Error(`unexpected argument "${positionals[0]}"`);
  return {
    bars: values.bars === undefined ? defaultBars : integer('bars', values.bars, 1, maxBars),
    seed: values.seed === undefined ? 1 : integer('seed', values.seed, 0, 2 ** 31 - 1),
    reset: values.reset ?? false,
  };
}

/**
 * Argument parsing for the admin commands (cli.ts and command modules that
 * register with it): node:util parseArgs, with messages that say what is
 * wrong in the command's own terms.
 */
import { parseArgs, type ParseArgsConfig } from 'node:util';

/** Bad arguments: the message is shown to the operator as is. */
export class UsageError extends Error {}

export type Options = NonNullable<ParseArgsConfig['options']>;

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const ISO_TIME = /^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d{1,6})?)?(Z|[+-]\d{2}:?\d{2})?)?$/;

/**
 * `--days -3`: parseArgs calls a value starting with '-' "ambiguous"; a string
 * option followed by something that is not one of the command's options takes
 * it as its value (then judged by the option's own rule: "got -3").
 */
function joinDashValues(args: string[], options: Options): string[] {
  const out: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    const next = args[i + 1];
    const name = arg.startsWith('--') ? arg.slice(2) : undefined;
    if (
      name !== undefined &&
      options[name]?.type === 'string' &&
      next !== undefined &&
      next.startsWith('-') &&
      !(next.startsWith('--') && next.slice(2).split('=')[0]! in options)
    ) {
      out.push(`${arg}=${next}`);
      i++;
    } else {
      out.push(arg);
    }
  }
  return out;
}

const optionList = (options: Options) =>
  Object.keys(options).length
    ? `it accepts ${Object.keys(options)
        .map((o) => `--${o}`)
        .join(', ')}`
    : 'it takes no options';

export function parse(args: string[], options: Options, positionals: string[], command = 'this command') {
  let parsed;
  try {
    parsed = parseArgs({ args: joinDashValues(args, options), options, allowPositionals: true, strict: true });
  } catch (e) {
    const err = e as { code?: string; message: string };
    const option = /'(-[^']*)'/.exec(err.message)?.[1];
    if (err.code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION')
      throw new UsageError(`unknown option ${option ?? ''} for "${command}"; ${optionList(options)}`);
    if (err.code === 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE' && /argument missing/.test(err.message))
      throw new UsageError(`${option?.split(' ')[0] ?? 'an option'} needs a value`);
    throw new UsageError(err.message.split('\n')[0]!);
  }
  if (parsed.positionals.length !== positionals.length) {
    throw new UsageError(
      positionals.length
        ? `expected ${positionals.join(' ')}, got ${parsed.positionals.length} argument(s)`
        : `unexpected argument "${parsed.positionals[0]}"`,
    );
  }
  return { values: parsed.values as Record<string, string | undefined>, positionals: parsed.positionals };
}

export function uuid(value: string | undefined, what: string): string {
  if (!value || !UUID.test(value)) throw new UsageError(`${what} must be a UUID, got "${value ?? ''}"`);
  return value.toLowerCase();
}

export function time(value: string | undefined, what: string): Date {
  const date = value && ISO_TIME.test(value) ? new Date(value) : undefined;
  if (!date || Number.isNaN(date.getTime()))
    throw new UsageError(`${what} must be an ISO 8601 date or date-time, got "${value ?? ''}"`);
  return date;
}

export function limit(value: string | undefined, what: string): number | null {
  if (value === undefined) throw new UsageError(`${what} is required (a positive integer or "unlimited")`);
  if (value === 'unlimited') return null;
  if (!/^[1-9]\d{0,9}$/.test(value) || Number(value) > 2147483647) {
    throw new UsageError(`${what} must be a positive integer or "unlimited", got "${value}"`);
  }
  return Number(value);
}

export function required(value: string | undefined, what: string): string {
  if (value === undefined || value.trim() === '') throw new UsageError(`${what} is required`);
  return value;
}

/**
 * One admin command. cli.ts lists the built-in ones; a module adds its own
 * (e.g. `webhook set`) by exporting an array of these and adding it to
 * COMMANDS in cli.ts in one line.
 */
export interface AdminCommand {
  /** One or two words: 'usage', 'plan create', 'webhook set'. */
  name: string;
  /** What follows the name in the usage line: 'SUBSCRIBER_ID URL [--flag X]'. */
  synopsis: string;
  /** One sentence: what it does and what it prints. */
  description: string;
  /** Runs against the database (owner connection); returns the JSON to print. Throws UsageError for bad arguments. */
  run(pool: import('../db/pools').Pool, args: string[]): Promise<unknown>;
}

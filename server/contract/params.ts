/**
 * Query parameter parsing for the partner routes. Every rule of decisions.md
 * "Parameters and errors" that can be judged from the request alone lives here;
 * a broken rule is a 400 naming the parameter as the contract spells it.
 * Nothing is clamped or silently ignored.
 */
import type { Request } from 'express';
import { HttpError } from './errors';

export const badRequest = (message: string): HttpError => new HttpError(400, message);

export interface IntRule {
  min: number;
  max: number;
  default: number;
}
export interface NumberRule {
  min: number;
  max: number;
  minExclusive?: boolean;
}

// The caps of the partner contract (partner-api-v1.md, decisions.md), stated once for both transports.
/** GET bars `limit` (GraphQL: the end of Query.bars). */
export const BARS_LIMIT: IntRule = { min: 1, max: 250, default: 100 };
/** GET bars `radius` in miles (GraphQL: near.radiusMiles). */
export const RADIUS: NumberRule = { min: 0, max: 100, minExclusive: true };
/** GET bars `ids` entries (GraphQL: Query.bars ids). */
export const MAX_IDS = 100;
/** Characters of a search text `q` (GET search, GET cities). */
export const MAX_Q = 200;
/** decisions.md v1.1: search serves the 1,000 best matches at most (api.search checks it too). */
export const SEARCH_CAP = 1000;
export const SEARCH_TYPES = ['bar', 'city'] as const;
/** GET usage/requests `limit` (entries per page). */
export const USAGE_REQUESTS_LIMIT: IntRule = { min: 1, max: 200, default: 50 };

export const PAGE: IntRule = { min: 1, max: 2147483647, default: 1 };
export const PER_PAGE: IntRule = { min: 1, max: 100, default: 20 };
export const LATITUDE: NumberRule = { min: -90, max: 90 };
export const LONGITUDE: NumberRule = { min: -180, max: 180 };

export const CLASSIFICATIONS = [
  'live_music',
  'dj',
  'trivia',
  'karaoke',
  'happy_hour',
  'sports',
  'comedy',
  'special',
] as const;

const INTEGER = /^[+-]?\d+$/;
const DECIMAL = /^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$/;
const DATE = /^(\d{4})-(\d{2})-(\d{2})$/;
const DATE_TIME = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2})(?:\.\d{1,6})?)?(Z|[+-](\d{2}):?(\d{2}))?$/i;

function rangeText(rule: NumberRule): string {
  return rule.minExclusive ? `greater than ${rule.min} and at most ${rule.max}` : `between ${rule.min} and ${rule.max}`;
}

function validDate(y: string, m: string, d: string): boolean {
  const year = Number(y),
    month = Number(m),
    day = Number(d);
  if (year < 1 || month < 1 || month > 12 || day < 1) return false;
  return day <= new Date(Date.UTC(year, month, 0)).getUTCDate();
}

/** One request's query string, read parameter by parameter. */
export class QueryParams {
  constructor(private readonly query: Request['query']) {}

  /** A single string value; a repeated (`a=1&a=2`), bracketed or nested parameter is a 400. */
  string(name: string): string | undefined {
    return single(name, this.query[name]);
  }

  /** A non-empty string (category, group_slug): empty would silently match nothing. */
  nonEmpty(name: string): string | undefined {
    const value = this.string(name);
    if (value !== undefined && value.trim() === '') throw badRequest(`${name} must not be empty`);
    return value;
  }

  int(name: string, rule: IntRule): number {
    const raw = this.string(name);
    if (raw === undefined) return rule.default;
    const n = INTEGER.test(raw) ? Number(raw) : NaN;
    if (!Number.isSafeInteger(n) || n < rule.min || n > rule.max) {
      throw badRequest(`${name} must be an integer between ${rule.min} and ${rule.max}`);
    }
    return n;
  }

  /** A decimal number, unchecked (NaN: not one); the rule is applied by the caller. */
  decimal(name: string): number | undefined {
    const raw = this.string(name);
    return raw === undefined ? undefined : toDecimal(raw);
  }

  number(name: string, rule: NumberRule): number | undefined {
    return parseNumber(name, this.string(name), rule);
  }

  /** `corner1[latitude]`: with the 'extended' query parser corner1 arrives as an object. */
  nestedNumber(name: string, key: string, rule: NumberRule): number | undefined {
    const outer = this.query[name];
    const label = `${name}[${key}]`;
    if (outer === undefined) return undefined;
    if (typeof outer !== 'object' || Array.isArray(outer)) {
      throw badRequest(`${name} must be given as ${name}[latitude] and ${name}[longitude]`);
    }
    return parseNumber(label, single(label, (outer as Record<string, unknown>)[key]), rule);
  }

  /** YYYY-MM-DD or an ISO 8601 date-time (offset optional: without one it is the city's local time). */
  date(name: string): string | undefined {
    const raw = this.string(name);
    return raw === undefined ? undefined : rules.date(name, raw);
  }

  /** An ISO 8601 date-time with an offset (Z or ±hh:mm), e.g. open_at. */
  dateTime(name: string): string | undefined {
    const raw = this.string(name);
    return raw === undefined ? undefined : rules.dateTime(name, raw);
  }

  boolean(name: string): boolean | undefined {
    const raw = this.string(name);
    if (raw === undefined) return undefined;
    if (raw !== 'true' && raw !== 'false') throw badRequest(`${name} must be true or false`);
    return raw === 'true';
  }

  /** A comma-separated list of allowed values (any of them), duplicates once. */
  listOf<T extends string>(name: string, allowed: readonly T[]): T[] | undefined {
    const items = this.list(name);
    return items === undefined ? undefined : rules.listOf(name, items, allowed);
  }

  /** A comma-separated list, items trimmed. */
  list(name: string): string[] | undefined {
    return this.string(name)
      ?.split(',')
      .map((s) => s.trim());
  }

  oneOf<T extends string>(name: string, allowed: readonly T[]): T | undefined {
    const raw = this.string(name);
    if (raw === undefined) return undefined;
    if (!(allowed as readonly string[]).includes(raw)) throw badRequest(`${name} must be one of ${allowed.join(', ')}`);
    return raw as T;
  }
}

/** `2026-11-22T10:00:00 05:00`: an unencoded + arrives as a space where the offset sign belongs. */
function plusSentAsSpace(name: string, raw: string): void {
  if (/T\d{2}:\d{2}(:\d{2}(\.\d+)?)? \d{2}:?\d{2}$/i.test(raw)) {
    throw badRequest(
      `${name} holds a space where the offset sign belongs: a + in a query string must be sent as %2B (e.g. 2026-11-22T10:00:00%2B05:00)`,
    );
  }
}

function single(name: string, value: unknown): string | undefined {
  if (value === undefined || typeof value === 'string') return value;
  throw badRequest(`${name} must be given once, as a single value`);
}

function parseNumber(name: string, raw: string | undefined, rule: NumberRule): number | undefined {
  return raw === undefined ? undefined : rules.number(name, toDecimal(raw), rule);
}

/** A decimal number's value, NaN for anything else. */
function toDecimal(raw: string): number {
  return DECIMAL.test(raw) ? Number(raw) : NaN;
}

export const PRICE_LEVELS = ['1', '2', '3', '4'] as const;
export const STATUSES = ['closed', 'quiet', 'moderate', 'busy', 'very_busy'] as const;
export const RATING: NumberRule = { min: 0, max: 5 };

export interface BarFilters {
  openNow: boolean | null;
  openAt: string | null;
  priceLevels: number[] | null;
  minRating: number | null;
  statuses: string[] | null;
}

/**
 * The parameter rules on values, the parameter named by the caller: REST reads
 * them from the query string (QueryParams), GraphQL from typed arguments, and
 * each names its own parameter (`start_date`, `startDate`) in the 400 text.
 */
export const rules = {
  /** YYYY-MM-DD or an ISO 8601 date-time (offset optional: without one it is the city's local time). */
  date(name: string, raw: string): string {
    const message = `${name} must be a date (YYYY-MM-DD) or an ISO 8601 date-time (e.g. 2026-11-22T21:30:00Z)`;
    plusSentAsSpace(name, raw);
    const d = DATE.exec(raw);
    if (d) {
      if (!validDate(d[1]!, d[2]!, d[3]!)) throw badRequest(message);
      return raw;
    }
    const t = DATE_TIME.exec(raw);
    if (!t || !validDate(t[1]!, t[2]!, t[3]!)) throw badRequest(message);
    const [hour, minute, second] = [Number(t[4]), Number(t[5]), Number(t[6] ?? 0)];
    const [offsetHour, offsetMinute] = [Number(t[8] ?? 0), Number(t[9] ?? 0)];
    if (hour > 23 || minute > 59 || second > 59 || offsetHour > 14 || offsetMinute > 59) throw badRequest(message);
    return raw;
  },

  /** An ISO 8601 date-time with an offset (Z or ±hh:mm), e.g. open_at. */
  dateTime(name: string, raw: string): string {
    plusSentAsSpace(name, raw);
    const message = `${name} must be an ISO 8601 date-time with an offset (e.g. 2026-11-22T21:30:00Z or 2026-11-22T15:30:00-06:00)`;
    const t = DATE_TIME.exec(raw);
    if (!t || t[7] === undefined || !validDate(t[1]!, t[2]!, t[3]!)) throw badRequest(message);
    const [hour, minute, second] = [Number(t[4]), Number(t[5]), Number(t[6] ?? 0)];
    const [offsetHour, offsetMinute] = [Number(t[8] ?? 0), Number(t[9] ?? 0)];
    if (hour > 23 || minute > 59 || second > 59 || offsetHour > 14 || offsetMinute > 59) throw badRequest(message);
    return raw;
  },

  /** Items from a list of allowed values (any of them), duplicates once. */
  listOf<T extends string>(name: string, items: readonly string[], allowed: readonly T[]): T[] {
    if (items.some((i) => !(allowed as readonly string[]).includes(i))) {
      throw badRequest(`${name} must be a comma-separated list of ${allowed.join(', ')}`);
    }
    return [...new Set(items)] as T[];
  },

  /** A search text (GET search and GET cities `q`): not blank, at most MAX_Q characters. */
  text(name: string, text: string): string {
    if (text.trim() === '') throw badRequest(`${name} must not be blank`);
    if ([...text].length > MAX_Q) throw badRequest(`${name} must be at most ${MAX_Q} characters`);
    return text;
  },

  /** A number within a rule (NaN: not a number). */
  number(name: string, n: number, rule: NumberRule): number {
    const inRange = rule.minExclusive ? n > rule.min : n >= rule.min;
    if (!Number.isFinite(n) || !inRange || n > rule.max)
      throw badRequest(`${name} must be a number ${rangeText(rule)}`);
    return n;
  },
};

/** The filters' parameter names in each transport's spelling. */
export interface FilterNames {
  openNow: string;
  openAt: string;
  priceLevels: string;
  minRating: string;
  statuses: string;
}
/** The filters as given, read in this order (the first bad one is the 400). */
export interface FilterInput {
  openNow(): boolean | undefined;
  openAt(): string | undefined;
  priceLevels(): string[] | undefined;
  minRating(): number | undefined;
  statuses(): string[] | undefined;
}

/** The v1.1 filters' rules (decisions.md v1.1 "Filters"), for both transports. */
export function checkedBarFilters(input: FilterInput, names: FilterNames): BarFilters {
  const openNow = input.openNow();
  const rawOpenAt = input.openAt();
  const openAt = rawOpenAt === undefined ? undefined : rules.dateTime(names.openAt, rawOpenAt);
  openAtAlone(names, openNow, openAt);
  const priceLevels = input.priceLevels();
  const levels = priceLevels && rules.listOf(names.priceLevels, priceLevels, PRICE_LEVELS).map(Number);
  const minRating = input.minRating();
  const rating = minRating === undefined ? undefined : rules.number(names.minRating, minRating, RATING);
  const statuses = input.statuses();
  return {
    openNow: openNow ?? null,
    openAt: openAt ?? null,
    priceLevels: levels ?? null,
    minRating: rating ?? null,
    statuses: statuses === undefined ? null : rules.listOf(names.statuses, statuses, STATUSES),
  };
}

/** open_at and open_now exclude each other (decisions.md v1.1 "Filters"). */
export function openAtAlone(names: Pick<FilterNames, 'openAt' | 'openNow'>, openNow: unknown, openAt: unknown): void {
  if (openNow != null && openAt != null) throw badRequest(`${names.openAt} cannot be combined with ${names.openNow}`);
}

/** GET bars `ids`: comma-separated, at most MAX_IDS entries; unknown ids are the database's business (skipped). */
export function barIds(raw: string | undefined): string[] | undefined {
  if (raw === undefined) return undefined;
  const ids = raw.split(',').map((s) => s.trim());
  if (ids.some((id) => id === ''))
    throw badRequest('ids must be a comma-separated list of bar ids without empty entries');
  if (ids.length > MAX_IDS) throw badRequest(`ids must have at most ${MAX_IDS} entries`);
  return ids;
}

/** The v1.1 bar filters as the api functions' named arguments. */
export function barFilterArgs(f: BarFilters) {
  return {
    open_now: f.openNow,
    open_at: f.openAt,
    price_levels: f.priceLevels,
    min_rating: f.minRating,
    statuses: f.statuses,
  };
}

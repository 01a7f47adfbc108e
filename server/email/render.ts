/**
 * The usage-alert e-mail and the unsubscribe pages, rendered from the template
 * files in server/email/templates (read from the source tree through
 * projectRoot, so `npm start`'s compiled dist/ and the Docker image, which
 * copies that folder, use the same files). `{{name}}` is replaced by the
 * value, HTML-escaped in .html templates; a placeholder without a value is an
 * error, not an empty string.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { projectRoot } from '../config';
import { windowEnd, type Bucket } from '../ratelimit/windows';

export const TEMPLATE_DIR = path.join(projectRoot, 'server', 'email', 'templates');

const cache = new Map<string, string>();

function template(name: string): string {
  let text = cache.get(name);
  if (text === undefined) {
    text = readFileSync(path.join(TEMPLATE_DIR, name), 'utf8');
    cache.set(name, text);
  }
  return text;
}

const HTML_ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };
export const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (c) => HTML_ESCAPES[c]!);

export function render(name: string, values: Record<string, string | number>): string {
  const html = name.endsWith('.html');
  return template(name).replace(/\{\{(\w+)\}\}/g, (_m, key: string) => {
    const value = values[key];
    if (value === undefined) throw new Error(`template ${name}: no value for {{${key}}}`);
    return html ? escapeHtml(String(value)) : String(value);
  });
}

/** What an alert e-mail says (one row of private.email_claim). */
export interface AlertEmailFacts {
  subscriberName: string;
  keyPrefix: string;
  bucket: Bucket;
  level: 'warning' | 'high_warning' | 'limit_reached';
  windowStart: Date;
  used: number;
  limit: number;
  alertCount: number;
  firstAlertAt: Date;
  lastAlertAt: Date;
}

export const LEVELS = {
  warning: { words: 'Warning', percent: 80 },
  high_warning: { words: 'High usage warning', percent: 90 },
  limit_reached: { words: 'Limit reached', percent: 100 },
} as const;

/** ISO 8601 in UTC, to the second: 2026-11-24T17:00:00Z. */
export const isoUtc = (d: Date) => d.toISOString().replace(/\.\d{3}Z$/, 'Z');

export interface RenderedEmail {
  subject: string;
  text: string;
  html: string;
}

export function renderAlertEmail(
  f: AlertEmailFacts,
  links: { unsubscribeUrl: string; usageUrl: string },
): RenderedEmail {
  const level = LEVELS[f.level];
  const resetAt = new Date(windowEnd(f.bucket, f.windowStart.getTime()));
  const coverage =
    f.alertCount > 1
      ? `This e-mail covers ${f.alertCount} alerts at this level between ${isoUtc(f.firstAlertAt)} and ${isoUtc(f.lastAlertAt)}: minute-limit alerts are sent at most once an hour per key and level; the figures above are from the latest.`
      : `This e-mail covers 1 alert.`;
  const advice =
    f.level === 'limit_reached'
      ? `Until ${isoUtc(resetAt)} further requests with this key get 429 Too Many Requests (with Retry-After).`
      : `At 100% further requests in the window get 429 Too Many Requests until it resets.`;
  const values = {
    level_words: level.words,
    percent: level.percent,
    bucket: f.bucket,
    subscriber_name: f.subscriberName,
    key_prefix: f.keyPrefix,
    window_start: isoUtc(f.windowStart),
    reset_at: isoUtc(resetAt),
    limit: f.limit,
    used: f.used,
    coverage,
    advice,
    usage_url: links.usageUrl,
    unsubscribe_url: links.unsubscribeUrl,
  };
  return {
    subject: render('usage-alert.subject.txt', values).trim(),
    text: render('usage-alert.txt', values),
    html: render('usage-alert.html', values),
  };
}

/** What a deprecation e-mail says (one row of private.deprecation_notice_claim). */
export interface DeprecationEmailFacts {
  subscriberName: string;
  what: string;
  /** YYYY-MM-DD */
  sunset: string;
  replacement: string;
  changelog: string;
  firstCallAt: Date;
}

export function renderDeprecationEmail(
  f: DeprecationEmailFacts,
  links: { unsubscribeUrl: string; usageUrl: string; changelogUrl: string },
): RenderedEmail {
  const abs = (link: string) => (link.startsWith('/') ? `${new URL(links.usageUrl).origin}${link}` : link);
  const values = {
    subscriber_name: f.subscriberName,
    what: f.what,
    sunset: f.sunset,
    replacement: f.replacement,
    changelog: abs(f.changelog),
    first_call_at: isoUtc(f.firstCallAt),
    usage_url: links.usageUrl,
    changelog_url: links.changelogUrl,
    unsubscribe_url: links.unsubscribeUrl,
  };
  return {
    subject: render('deprecation-notice.subject.txt', values).trim(),
    text: render('deprecation-notice.txt', values),
    html: render('deprecation-notice.html', values),
  };
}

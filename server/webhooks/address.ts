/**
 * SSRF rules for webhook URLs (operators.md §4): https only unless
 * WEBHOOK_ALLOW_HTTP=true; the host is resolved and every address must be
 * public unless WEBHOOK_ALLOW_PRIVATE=true (loopback, private, link-local,
 * CGNAT, unique-local, multicast, unspecified and IPv4-mapped forms of them are
 * refused). The caller connects to the address returned here (the one that
 * was checked), so a DNS answer that changes between check and connect
 * cannot redirect the request.
 */
import { lookup } from 'node:dns/promises';
import { BlockList, isIP } from 'node:net';

export interface UrlRules {
  allowHttp: boolean;
  allowPrivate: boolean;
}

export interface CheckedTarget {
  url: URL;
  address: string;
  family: 4 | 6;
}

export class WebhookUrlError extends Error {}

const blocked = new BlockList();
for (const [net, bits] of [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['224.0.0.0', 4],
  ['240.0.0.0', 4],
] as const) {
  blocked.addSubnet(net, bits, 'ipv4');
}
for (const [net, bits] of [
  ['::', 128],
  ['::1', 128],
  ['fc00::', 7],
  ['fe80::', 10],
  ['ff00::', 8],
  ['64:ff9b::', 96],
] as const) {
  blocked.addSubnet(net, bits, 'ipv6');
}

export function isPrivateAddress(address: string): boolean {
  const family = isIP(address);
  if (family === 4) return blocked.check(address, 'ipv4');
  if (family === 6) {
    const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
    if (mapped?.[1]) return blocked.check(mapped[1], 'ipv4');
    return blocked.check(address, 'ipv6');
  }
  return true;
}

/** Syntax rules only (used when an operator sets an endpoint). */
export function parseWebhookUrl(raw: string, rules: UrlRules): URL {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new WebhookUrlError('not a valid URL');
  }
  if (url.protocol !== 'https:' && !(rules.allowHttp && url.protocol === 'http:')) {
    throw new WebhookUrlError(rules.allowHttp ? 'URL must use https or http' : 'URL must use https');
  }
  if (url.username || url.password) throw new WebhookUrlError('URL must not contain credentials');
  return url;
}

/** Resolves the host and returns the first address if every address is allowed. */
export async function checkWebhookTarget(raw: string, rules: UrlRules): Promise<CheckedTarget> {
  const url = parseWebhookUrl(raw, rules);
  const host = url.hostname.replace(/^\[|\]$/g, '');
  const answers = isIP(host)
    ? [{ address: host, family: isIP(host) }]
    : await lookup(host, { all: true, verbatim: true }).catch(() => {
        throw new WebhookUrlError(`host ${host} does not resolve`);
      });
  if (answers.length === 0) throw new WebhookUrlError(`host ${host} does not resolve`);
  if (!rules.allowPrivate) {
    const bad = answers.find((a) => isPrivateAddress(a.address));
    if (bad) throw new WebhookUrlError(`host ${host} resolves to a non-public address (${bad.address})`);
  }
  const first = answers[0]!;
  return { url, address: first.address, family: first.family === 6 ? 6 : 4 };
}

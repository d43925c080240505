// The outbound address guard (spec: Limits → Outbound address guard), checked before every attempt:
//   1. https:// only, unless the host is on the admin allowlist;
//   2. the host is resolved at send time and EVERY resolved address is checked against the refused
//      ranges, unless the allowlist allows it; names reserved for loopback (RFC 6761: `localhost` and
//      `*.localhost`) are refused before any lookup unless the allowlist names the host;
//   3. the attempt connects to the checked address, with no second lookup (send.ts pins it).
// How the allowlist exempts (docs/webhooks.md, "Address guard"):
//   - a host-name entry matches the URL's host exactly (case-insensitive, no wildcards): that host may
//     use http:// and all of its addresses are allowed;
//   - a CIDR entry (or a bare IP, as /32 or /128) allows the resolved addresses inside it; a host whose
//     every address lies in allowlisted CIDRs may use http://. Addresses outside the CIDRs are still
//     checked, so a name that resolves to one allowed and one refused address is refused.
//   - nothing exempts rule 3, the 10 s timeout or the refusal of redirects.
// Range math is ipaddr.js's (its tables of special-purpose IPv4/IPv6 ranges): an address passes only
// when ipaddr.js calls it plain `unicast` and, for IPv6, it is global unicast (2000::/3). That refuses
// loopback, link-local (169.254.169.254 included), private, CGNAT, unique-local, unspecified,
// multicast, broadcast, reserved/documentation, benchmarking, NAT64 (64:ff9b::/96, 64:ff9b:1::/48),
// 6to4, Teredo, IPv4-mapped and IPv4-compatible forms, site-local, discard and the rest.
import { lookup } from 'node:dns/promises';
import ipaddr from 'ipaddr.js';

export type Address = ipaddr.IPv4 | ipaddr.IPv6;
type Cidr = [Address, number];

export interface Allowlist {
  hosts: ReadonlySet<string>;
  cidrs: readonly Cidr[];
}

export const EMPTY_ALLOWLIST: Allowlist = { hosts: new Set(), cidrs: [] };
export const MAX_ALLOWLIST_ENTRIES = 500;

const GLOBAL_UNICAST_V6 = ipaddr.parseCIDR('2000::/3');
const HOST_NAME = /^(?=.{1,253}$)([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*$/;

/** Lower case, without a trailing dot: how host names are compared. */
export const normalizeHost = (host: string) => host.toLowerCase().replace(/\.$/, '');

/** RFC 6761 §6.3: `localhost` and every name under it mean loopback, whatever a resolver answers. */
export const isLoopbackName = (host: string) => {
  const h = normalizeHost(host);
  return h === 'localhost' || h.endsWith('.localhost');
};

/** Parse an address as it comes from a resolver or a URL: brackets and a zone id are dropped. */
export function parseAddress(text: string): Address | null {
  const bare = text.replace(/^\[(.*)\]$/, '$1').replace(/%.*$/, '');
  return ipaddr.isValid(bare) ? ipaddr.parse(bare) : null;
}

/** Why an address is refused (the name of its special-purpose range), or null when it may be used. */
export function refusedRange(address: Address): string | null {
  const range = address.range();
  if (range !== 'unicast') return range;
  if (address.kind() === 'ipv6' && !address.match(GLOBAL_UNICAST_V6)) return 'notGlobalUnicast';
  return null;
}

type Entry = { host: string } | { cidr: Cidr };

/** One allowlist line: a host name, a CIDR, or a bare IP address (four decimal parts for IPv4). */
export function parseAllowlistEntry(line: string): Entry | { error: string } {
  const s = line.trim().toLowerCase().replace(/^\[(.*)\]$/, '$1');
  const [addr, prefix, extra] = s.split('/');
  if (extra !== undefined) return { error: 'not a host name or CIDR' };
  if (ipaddr.IPv4.isValidFourPartDecimal(addr) || ipaddr.IPv6.isValid(addr)) {
    if (addr.includes('%')) return { error: 'zone ids are not allowed' };
    const ip = ipaddr.parse(addr);
    const max = ip.kind() === 'ipv4' ? 32 : 128;
    if (prefix === undefined) return { cidr: [ip, max] };
    if (!/^\d{1,3}$/.test(prefix) || Number(prefix) > max) return { error: `the prefix length must be 0 to ${max}` };
    return { cidr: [ip, Number(prefix)] };
  }
  if (prefix !== undefined || /^[\d.]+$/.test(s) || /^0x/i.test(s)) return { error: 'write IPv4 addresses as four decimal parts (e.g. 10.0.0.0/8)' };
  const host = normalizeHost(s);
  if (!HOST_NAME.test(host)) return { error: 'not a host name or CIDR' };
  if (/^\d+$/.test(host.split('.').pop()!)) return { error: 'not a host name or CIDR' };
  return { host };
}

/** Validate the allowlist text (one entry per line); blank lines are ignored, duplicates dropped. */
export function parseAllowlist(text: string): { entries: string[]; errors: Record<string, string> } {
  const entries: string[] = [];
  const errors: Record<string, string> = {};
  const seen = new Set<string>();
  text.split(/\r?\n/).forEach((raw, i) => {
    const line = raw.trim();
    if (!line) return;
    const parsed = parseAllowlistEntry(line);
    if ('error' in parsed) errors[`allowlist.line${i + 1}`] = parsed.error;
    else {
      const canonical = 'host' in parsed ? parsed.host : line.toLowerCase().replace(/^\[(.*)\]$/, '$1');
      if (!seen.has(canonical)) entries.push(canonical);
      seen.add(canonical);
    }
  });
  if (entries.length > MAX_ALLOWLIST_ENTRIES) errors.allowlist = `at most ${MAX_ALLOWLIST_ENTRIES} entries`;
  return { entries, errors };
}

/** The stored entries (already validated) as a matcher. */
export function compileAllowlist(entries: readonly string[]): Allowlist {
  const hosts = new Set<string>();
  const cidrs: Cidr[] = [];
  for (const e of entries) {
    const parsed = parseAllowlistEntry(e);
    if ('host' in parsed) hosts.add(parsed.host);
    else if ('cidr' in parsed) cidrs.push(parsed.cidr);
  }
  return { hosts, cidrs };
}

const inCidrs = (a: Address, cidrs: readonly Cidr[]) => cidrs.some(([net, bits]) => net.kind() === a.kind() && a.match(net, bits));

export interface ResolvedAddress {
  address: string;
  family: 4 | 6;
}
/** Resolves a host name to every address it has (getaddrinfo, like any client would). */
export type Resolver = (host: string) => Promise<ResolvedAddress[]>;

export const systemResolver: Resolver = async (host) =>
  (await lookup(host, { all: true, verbatim: true })).map((a) => ({ address: a.address, family: a.family === 6 ? 6 : 4 }));

/**
 * The part of rules 1 and 2 that needs no DNS, run when a webhook URL is saved (docs/webhooks.md): a URL
 * that must be refused at every attempt is refused at once instead of failing 8 times. Null when the
 * URL may pass; the full check still runs before every attempt (a name can resolve anywhere later).
 */
export function staticRefusal(url: URL, allow: Allowlist): string | null {
  const literal = parseAddress(url.hostname);
  if (literal) {
    const allowed = inCidrs(literal, allow.cidrs);
    const range = refusedRange(literal);
    if (range && !allowed) return `${literal.toString()} is a refused address (${range}); add it to the address allowlist first to use it`;
    if (url.protocol === 'http:' && !allowed) return 'http:// is sent only to hosts on the address allowlist; use https://';
    return null;
  }
  if (allow.hosts.has(normalizeHost(url.hostname))) return null;
  if (isLoopbackName(url.hostname)) return `${url.hostname} is a loopback name (RFC 6761); add it to the address allowlist first to use it`;
  // A name whose every address is in allowlisted CIDRs may use http://, which only DNS can tell.
  if (url.protocol === 'http:' && allow.cidrs.length === 0) return 'http:// is sent only to hosts on the address allowlist; use https://';
  return null;
}

export type GuardResult =
  | { ok: true; address: string; family: 4 | 6; literal: boolean; addresses: string[] }
  | { ok: false; error: 'blocked_address' | 'dns_error' | 'invalid_url'; detail: string };

/** Rules 1 and 2 for one attempt; the address to connect to when allowed. */
export async function checkTarget(url: URL, allow: Allowlist, resolve: Resolver = systemResolver): Promise<GuardResult> {
  if (url.protocol !== 'https:' && url.protocol !== 'http:') return { ok: false, error: 'invalid_url', detail: `${url.protocol} URLs are not sent` };
  const literal = parseAddress(url.hostname);
  const hostListed = !literal && allow.hosts.has(normalizeHost(url.hostname));
  if (!literal && !hostListed && isLoopbackName(url.hostname)) {
    return { ok: false, error: 'blocked_address', detail: `${url.hostname} is a loopback name (RFC 6761), refused unless the allowlist names it` };
  }
  let resolved: ResolvedAddress[];
  if (literal) resolved = [{ address: literal.toString(), family: literal.kind() === 'ipv4' ? 4 : 6 }];
  else {
    try {
      resolved = await resolve(url.hostname);
    } catch (err) {
      return { ok: false, error: 'dns_error', detail: `cannot resolve ${url.hostname}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}` };
    }
    if (resolved.length === 0) return { ok: false, error: 'dns_error', detail: `${url.hostname} has no addresses` };
  }
  let allInCidrs = true;
  for (const r of resolved) {
    const a = parseAddress(r.address);
    if (!a) return { ok: false, error: 'blocked_address', detail: `${url.hostname} resolved to something that is not an IP address` };
    const allowedByCidr = inCidrs(a, allow.cidrs);
    allInCidrs &&= allowedByCidr;
    const range = refusedRange(a);
    if (range && !hostListed && !allowedByCidr) {
      return { ok: false, error: 'blocked_address', detail: `${url.hostname} resolves to ${a.toString()} (${range}), a refused address` };
    }
  }
  if (url.protocol === 'http:' && !hostListed && !allInCidrs) {
    return { ok: false, error: 'blocked_address', detail: 'http:// is sent only to hosts on the address allowlist; use https://' };
  }
  const first = resolved[0];
  return { ok: true, address: parseAddress(first.address)!.toString(), family: first.family, literal: Boolean(literal), addresses: resolved.map((r) => r.address) };
}

/**
 * checkTarget within `timeoutMs` (a lookup that hangs must not hold the attempt past its deadline): the
 * guard's answer, or a `timeout` refusal. The timer is cleared once the guard answers, so an attempt leaves
 * nothing pending behind it.
 */
export async function checkTargetWithin(url: URL, allow: Allowlist, resolve: Resolver, timeoutMs: number): Promise<GuardResult | { ok: false; error: 'timeout'; detail: string }> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<{ ok: false; error: 'timeout'; detail: string }>((ok) => {
    timer = setTimeout(() => ok({ ok: false, error: 'timeout', detail: `resolving ${url.hostname} took longer than ${timeoutMs} ms` }), timeoutMs);
    timer.unref();
  });
  try {
    return await Promise.race([checkTarget(url, allow, resolve), late]);
  } finally {
    clearTimeout(timer);
  }
}

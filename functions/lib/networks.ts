// Lists of client networks in settings (METRICS_ALLOW): CIDRs or bare addresses, separated by commas or
// white space, and the check of a peer's address against them. Range math is ipaddr.js's, as in the
// outbound guard (webhooks/guard.ts); an IPv4-mapped IPv6 peer (`::ffff:10.0.0.1`, a listener on `::`)
// is matched as the IPv4 address it is.
import ipaddr from 'ipaddr.js';

export type Network = [ipaddr.IPv4 | ipaddr.IPv6, number];

/** One entry: `10.0.0.0/8`, `fd00::/8`, or a bare address (/32, /128); null when it is neither. */
export function parseNetwork(text: string): Network | null {
  const [addr, prefix, extra] = text.trim().replace(/^\[(.*)\]$/, '$1').split('/');
  if (extra !== undefined || addr.includes('%')) return null;
  if (!ipaddr.IPv4.isValidFourPartDecimal(addr) && !ipaddr.IPv6.isValid(addr)) return null;
  const ip = ipaddr.parse(addr);
  const max = ip.kind() === 'ipv4' ? 32 : 128;
  if (prefix === undefined) return [ip, max];
  if (!/^\d{1,3}$/.test(prefix) || Number(prefix) > max) return null;
  return [ip, Number(prefix)];
}

/** The entries of a list, split on commas and white space. */
export const networkEntries = (list: string): string[] => list.split(/[\s,]+/).filter(Boolean);

/** Does the peer's address lie in one of the networks? An unparsable address never does. */
export function inNetworks(address: string, networks: readonly Network[]): boolean {
  const bare = address.replace(/%.*$/, '');
  if (!ipaddr.isValid(bare)) return false;
  const a = ipaddr.process(bare);
  return networks.some(([net, bits]) => net.kind() === a.kind() && a.match(net, bits));
}

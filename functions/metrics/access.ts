// Who may read GET /metrics (docs/operations.md, "Metrics"): nobody unless METRICS_TOKEN or
// METRICS_ALLOW is set. With METRICS_ALLOW the TCP peer (not X-Forwarded-For: Prometheus scrapes each
// replica directly) must be in one of its networks, or the endpoint does not exist for it (404); with
// METRICS_TOKEN the request must carry `Authorization: Bearer <token>` (compared in constant time), or
// it is 401. With both set, both hold.
import type { Config } from '../lib/config.ts';
import { constantTimeEqual } from '../lib/crypto.ts';
import { inNetworks, networkEntries, parseNetwork } from '../lib/networks.ts';
import type { Network } from '../lib/networks.ts';

export type MetricsAccess = 'off' | 'hidden' | 'unauthorized' | 'allowed';

const compiled = new WeakMap<Config, Network[]>();
function allowed(config: Config): Network[] {
  let nets = compiled.get(config);
  if (!nets) compiled.set(config, (nets = networkEntries(config.METRICS_ALLOW ?? '').map(parseNetwork).filter((n) => n !== null)));
  return nets;
}

/** The bearer token of an Authorization header, or null. */
const bearer = (header: string | null) => /^Bearer +(\S+) *$/i.exec(header ?? '')?.[1] ?? null;

export function metricsAccess(config: Pick<Config, 'METRICS_TOKEN' | 'METRICS_ALLOW'> & object, peerAddress: string, authorization: string | null): MetricsAccess {
  if (!config.METRICS_TOKEN && !config.METRICS_ALLOW) return 'off';
  if (config.METRICS_ALLOW && !inNetworks(peerAddress, allowed(config as Config))) return 'hidden';
  if (config.METRICS_TOKEN) {
    const sent = bearer(authorization);
    if (sent === null || !constantTimeEqual(sent, config.METRICS_TOKEN)) return 'unauthorized';
  }
  return 'allowed';
}

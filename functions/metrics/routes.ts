// GET /metrics: this replica's metrics in Prometheus's text format (registry.ts, collectors.ts), for the
// callers access.ts lets in; to everyone else the endpoint does not exist (404) or asks for the token (401).
import { route } from '../lib/context.ts';
import type { Route } from '../lib/context.ts';
import { HttpError } from '../lib/errors.ts';
import { metricsAccess } from './access.ts';
import './collectors.ts';
import { registry } from './registry.ts';

export const routes: Route[] = [
  route({ method: 'GET', path: '/metrics', tag: 'health', access: 'public',
    summary: 'Prometheus metrics of this replica (text exposition format); off unless METRICS_TOKEN or METRICS_ALLOW is set (docs/operations.md)',
    responses: {
      200: { description: 'the metrics, text/plain; version=0.0.4' },
      401: { description: 'METRICS_TOKEN is set and the request has no `Authorization: Bearer` with it' },
      404: { description: 'metrics are off, or the caller is not in METRICS_ALLOW' },
    },
    async handler({ request, peerAddress }, ctx) {
      const access = metricsAccess(ctx.config, peerAddress, request.headers.get('authorization'));
      if (access === 'off' || access === 'hidden') throw new HttpError(404, 'not_found', 'no route for GET /metrics');
      if (access === 'unauthorized') throw new HttpError(401, 'unauthorized', 'a metrics token is required', undefined, { 'www-authenticate': 'Bearer realm="metrics"' });
      const text = await registry.metrics();
      return new Response(text, { headers: { 'content-type': registry.contentType, 'cache-control': 'no-store' } });
    },
  }),
];

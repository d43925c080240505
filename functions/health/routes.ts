// Spec: Health checks — `GET /health` says only that the process is up; it never touches the database.
import type { Route } from '../lib/context.ts';

export const routes: Route[] = [
  {
    method: 'GET',
    path: '/health',
    handler: () => Response.json({ status: 'ok', timestamp: new Date().toISOString() }, { headers: { 'cache-control': 'no-store' } }),
  },
];

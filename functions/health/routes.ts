// Spec: Health checks — `GET /health` says only that the process is up; it never touches the database.
// It also names the build that answered (`version`, `build`: the commit, or `unknown`), like the
// X-Svc-Version header, so the replicas of a rolling upgrade can be told apart (docs/operations.md).
import { json } from '../lib/errors.ts';
import * as z from 'zod';
import { BUILD, VERSION } from '../../protocol/version.ts';
import { route } from '../lib/context.ts';
import type { Route } from '../lib/context.ts';

const healthBody = z.object({
  status: z.literal('ok'),
  timestamp: z.string(),
  version: z.string().describe('the package version of the build that answered'),
  build: z.string().describe('the commit it was built from (12 hex digits), or "unknown"'),
});

export const routes: Route[] = [
  route({ method: 'GET', path: '/health', tag: 'health', access: 'public',
    summary: 'Liveness: the process is up (does not check the database)',
    responses: { 200: { description: 'up', schema: healthBody } },
    handler: () => json({ status: 'ok', timestamp: new Date().toISOString(), version: VERSION, build: BUILD }, { headers: { 'cache-control': 'no-store' } }),
  }),
];

// Spec: Health checks — `GET /health` says only that the process is up; it never touches the database.
import { json } from '../lib/errors.ts';
import * as z from 'zod';
import { route } from '../lib/context.ts';
import type { Route } from '../lib/context.ts';

export const routes: Route[] = [
  route({
    method: 'GET',
    path: '/health',
    summary: 'Liveness: the process is up (does not check the database)',
    tag: 'health',
    access: 'public',
    responses: { 200: { description: 'up', schema: z.object({ status: z.literal('ok'), timestamp: z.string() }) } },
    handler: () => json({ status: 'ok', timestamp: new Date().toISOString() }, { headers: { 'cache-control': 'no-store' } }),
  }),
];

// Action links over HTTP (issue #40 part 2; docs/notifications.md, "Action links"): GET describes what
// a link will do, POST does it. Both need the signed-in user's browser session; the checks and their
// answers are in act.ts.
import * as z from 'zod';
import { actionDescription, actionPerformed } from '../../protocol/api/act.ts';
import { route } from '../lib/context.ts';
import type { Route } from '../lib/context.ts';
import { json } from '../lib/errors.ts';
import { openLink, useLink } from './act.ts';
import { projectName } from './queries.ts';
import { actionLabel, actionToken } from './tokens.ts';

const params = z.strictObject({ token: actionToken });
const refusals = {
  403: { description: 'an API token, a link made for another user, or a role below the action’s now' },
  404: { description: 'a forged, damaged or unknown link' },
  409: { description: 'already done (link_used), or no APP_ENCRYPTION_KEY on the server (encryption_key_missing)' },
  410: { description: 'expired (24 hours)' },
};

export const routes: Route[] = [
  route({ method: 'GET', path: '/api/act/:token', tag: 'notifications', access: 'user', params,
    summary: "What an action link will do, for the signed-in user (browser session): the action, its target and the facts read now (a pull request's title, checks, cost and diff size through pr.inspect; the stored state when the runner is offline)",
    responses: { 200: { description: 'the action', schema: actionDescription }, ...refusals },
    async handler({ principal, params }, ctx) {
      const link = await openLink(ctx, principal!, params.token);
      const d = await link.kind.describe(ctx, principal!, link.target, link.projectId);
      return json(
        { kind: link.kind.kind, label: actionLabel({ kind: link.kind.kind, target: link.claims.t }), target: link.claims.t, projectName: await projectName(ctx.db, link.projectId), ...d, personal: link.claims.u !== null, expiresAt: new Date(link.claims.e * 1000).toISOString() },
        { headers: { 'cache-control': 'no-store' } },
      );
    },
  }),
  route({ method: 'POST', path: '/api/act/:token', tag: 'notifications', access: 'user', params,
    summary: 'Do what an action link names, as the signed-in user with their role now; once per decision (audited with via: "link")',
    responses: { 200: { description: 'done', schema: actionPerformed }, ...refusals },
    async handler({ principal, params, requestId }, ctx) {
      return json(await useLink(ctx, principal!, params.token, requestId), { headers: { 'cache-control': 'no-store' } });
    },
  }),
];

// `GET /api/live` without a WebSocket upgrade: the route exists in the table (and so in the OpenAPI
// document and the authorization probes) and answers 426; the upgrade itself is taken by the HTTP
// server's `upgrade` event (functions/server.ts → live.ts) before routing.
import { route } from '../lib/context.ts';
import type { Route } from '../lib/context.ts';
import { HttpError, errorResponse } from '../lib/errors.ts';

export const routes: Route[] = [
  route({ method: 'GET', path: '/api/live',
    summary:
      'Live change notices over a WebSocket (upgrade this GET; same-origin pages only). Each message is a JSON notice {type, projectId?, id?, …}: ' +
      'runner, run, run.progress, project, fleet, webhook, notification, notification.read, audit.verification; first {type:"ready"}. ' +
      'Only notices the caller may read are sent. Close codes: 4401 signed out or session ended, 4403 bad Origin, 4408 too slow (reconnect and re-fetch), 4429 too many live sockets of this user (LIVE_MAX_SOCKETS_PER_USER per server process).',
    tag: 'live',
    access: 'user',
    responses: {
      101: { description: 'switching to the WebSocket protocol' },
      426: { description: 'a plain GET: this address only speaks WebSocket' },
    },
    handler: () =>
      errorResponse(new HttpError(426, 'upgrade_required', 'GET /api/live is a WebSocket: open it with an Upgrade: websocket request', undefined, { upgrade: 'websocket' })),
  }),
];

// The event list (issue #39 part 1; docs/webhooks.md "Reading the event list"): every event of the closed
// catalogue with the envelope outbound webhooks send for it, whether or not a webhook subscribes, for
// scripts that pull (a receiver that was down reads what it missed). GET /api/events pages in the order
// the events were stored (store.ts: a seq assigned at commit order) after an opaque cursor; GET
// /api/events/:eventId is one envelope. Project viewers see their projects' events, instance admins all;
// an event of a project you have no role on does not exist for you. Statements: queries.ts.
import * as z from 'zod';
import { eventEnvelope, eventList, eventsGone } from '../../protocol/api/events.ts';
import { projectRole, requireProjectRole } from '../auth/auth.ts';
import { route } from '../lib/context.ts';
import type { Route } from '../lib/context.ts';
import { idParam } from '../lib/project-routes.ts';
import { json, notFound } from '../lib/errors.ts';
import { respond } from '../lib/respond.ts';
import { EVENT_TYPES, isEventType } from '../webhooks/catalogue.ts';
import { decodeCursor, encodeCursor } from './cursor.ts';
import { eventPage, eventRow } from './queries.ts';

const TAG = 'events';
export const EVENTS_PAGE_MAX = 500;

export const eventsQuery = z.strictObject({
  after: z
    .string()
    .transform((v, c) => decodeCursor(v) ?? (c.addIssue({ code: 'custom', message: "must be a cursor from an earlier answer's next" }), z.NEVER))
    .optional()
    .describe("The `next` of the previous answer: the events stored after it. Without it, from the oldest event kept"),
  limit: z
    .string()
    .regex(/^\d{1,4}$/, { message: `must be 1 to ${EVENTS_PAGE_MAX}` })
    .transform(Number)
    .pipe(z.number().int().min(1, { message: `must be 1 to ${EVENTS_PAGE_MAX}` }).max(EVENTS_PAGE_MAX, { message: `must be 1 to ${EVENTS_PAGE_MAX}` }))
    .default(100),
  type: z
    .union([z.string().max(100), z.array(z.string().max(100)).max(EVENT_TYPES.length)])
    .transform((v, c) => {
      const types = Array.isArray(v) ? v : [v];
      const unknown = types.filter((t) => !isEventType(t));
      if (!unknown.length) return types;
      c.addIssue({ code: 'custom', message: `must be event types of the catalogue (GET /api/webhooks/catalogue); not: ${unknown.join(', ').slice(0, 200)}` });
      return z.NEVER;
    })
    .optional()
    .describe('Only events of these types; repeat it for several'),
  projectId: idParam('project').optional().describe('Only the events of this project (you need a role on it)'),
});

export const routes: Route[] = [
  route({ method: 'GET', path: '/api/events', tag: TAG, access: 'user', query: eventsQuery,
    summary: 'Catalogue events in the order they were stored, after a cursor: each the envelope webhooks send, whether or not one subscribes (kept EVENTS_RETENTION_DAYS)',
    responses: {
      200: { description: 'a page of events and the cursor after them (null when none was found: call again later with the same `after`)', schema: eventList },
      410: { description: 'the cursor is older than the events kept: `oldest` is the oldest cursor still valid', schema: eventsGone },
    },
    async handler({ principal, query }, ctx) {
      if (query.projectId) await requireProjectRole(ctx.db, principal!, query.projectId, 'viewer');
      const rows = await eventPage(ctx.db, principal!, { after: query.after ?? null, limit: query.limit, types: query.type ?? null, projectId: query.projectId ?? null });
      const horizon = rows[0].horizon;
      if (query.after !== undefined && BigInt(query.after) < BigInt(horizon)) {
        return json({ error: { code: 'cursor_expired', message: 'this cursor is older than the events kept (EVENTS_RETENTION_DAYS): start again from `oldest`' }, oldest: encodeCursor(horizon) }, { status: 410 });
      }
      const page = rows.filter((r) => r.seq !== null);
      const next = page.length ? JSON.stringify(encodeCursor(page[page.length - 1].seq!)) : 'null';
      // The stored bodies are the envelopes' JSON text exactly as sent: joined, not parsed and re-serialised.
      return respond(`{"events":[${page.map((r) => r.body).join(',')}],"next":${next}}`, 200, { 'content-type': 'application/json' });
    },
  }),
  route({ method: 'GET', path: '/api/events/:eventId', tag: TAG, access: 'user',
    params: z.strictObject({ eventId: z.string().regex(/^[A-Za-z0-9_-]{1,80}$/, { message: 'must be an event id' }) }),
    summary: 'One catalogue event: the envelope webhooks send for it',
    responses: { 200: { description: 'the envelope', schema: eventEnvelope } },
    async handler({ principal, params }, ctx) {
      const row = await eventRow(ctx.db, params.eventId);
      const visible = row && (principal!.user.instanceAdmin || (row.project_id !== null && (await projectRole(ctx.db, principal!.user, row.project_id)) !== null));
      if (!visible) throw notFound('no such event');
      return respond(row.body, 200, { 'content-type': 'application/json' });
    },
  }),
];

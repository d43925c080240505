// Answers of the event list (GET /api/events, GET /api/events/:eventId; functions/event-list/routes.ts,
// docs/webhooks.md "Reading the event list"): each event is the envelope exactly as an outbound webhook
// sends it (spec: Events → Envelope). The Webhooks page reads them as types only.
import * as z from 'zod';
import { cursor, iso } from './common.ts';

/** One catalogue event: the envelope a webhook receives for it. */
export const eventEnvelope = z.object({
  id: z.string(),
  type: z.string(),
  ts: iso,
  project: z.object({ id: z.string(), repo: z.string() }).nullable(),
  slot: z.string().optional(),
  issue: z.number().int().optional(),
  data: z.record(z.string(), z.unknown()),
});
export type EventEnvelope = z.output<typeof eventEnvelope>;

export const eventList = z.object({
  events: z.array(eventEnvelope),
  next: cursor.describe('Pass as `after` for the events stored after these; null when this call found none (call again later with the same `after`)'),
});
export type EventList = z.output<typeof eventList>;

/** 410: the cursor is older than EVENTS_RETENTION_DAYS; `oldest` is the oldest cursor still valid. */
export const eventsGone = z.object({
  error: z.object({ code: z.literal('cursor_expired'), message: z.string() }),
  oldest: z.string(),
});

// Answers of the action links API (issue #40 part 2; functions/act/routes.ts): what a link will do and
// what it did. The page web-static/pages/act.ts reads them (type imports only).
import * as z from 'zod';
import { iso } from './common.ts';

/** GET /api/act/:token: the action, its target and what will happen, as read now. */
export const actionDescription = z.object({
  kind: z.string(),
  label: z.string(),
  target: z.record(z.string(), z.unknown()),
  projectId: z.string(),
  projectName: z.string().nullable(),
  title: z.string(),
  summary: z.string(),
  facts: z.record(z.string(), z.unknown()),
  /** `runner`: read from the runner now (pr.inspect); `stored`: the server's last known state. */
  source: z.enum(['runner', 'stored']),
  note: z.string().nullable(),
  /** Made for you (a notification's link), or a chat channel's link that acts as whoever is signed in. */
  personal: z.boolean(),
  expiresAt: iso,
});
export type ActionDescription = z.output<typeof actionDescription>;

/** POST /api/act/:token: done. */
export const actionPerformed = z.object({ kind: z.string(), outcome: z.string(), data: z.record(z.string(), z.unknown()), usedAt: iso });
export type ActionPerformed = z.output<typeof actionPerformed>;

/** A notification's action with the caller's own link. */
export const notificationAction = z.object({ kind: z.string(), label: z.string(), url: z.string(), expiresAt: iso });

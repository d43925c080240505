// Answer of GET /api/projects/:projectId/queue (docs/github-app.md, "The issue queue"): a project's issue
// queue as the server keeps it (functions/codehost/queue.ts), which the Fleet page reads (type imports
// only, so zod stays out of the pages' bundle).
import * as z from 'zod';
import { iso } from './common.ts';

/** One issue of the queue; `slot` is the slot working on it now (null: none). */
export const queueIssue = z.object({
  number: z.number().int(),
  title: z.string(),
  url: z.string(),
  labels: z.array(z.string()),
  state: z.enum(['open', 'closed']),
  slot: z.string().nullable(),
  /** GitHub's updated_at when a delivery told it, else when the server last saw the issue change. */
  updatedAt: iso,
});
export type QueueIssue = z.output<typeof queueIssue>;

/** The queue: open issues (and those a delivery closed within the last day), by number; refreshedAt: when the whole open set was last read (null: never). */
export const projectQueue = z.object({ issues: z.array(queueIssue), refreshedAt: iso.nullable() });
export type ProjectQueue = z.output<typeof projectQueue>;

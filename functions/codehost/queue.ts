// A project's issue queue on the server (issue #36 item 3; docs/github-app.md, "The issue queue"). Three
// sources feed the one table `codehost_issues`:
//   - a runner's `codehost.queue` event (its poll saw the open set change; events/sinks/codehost.ts):
//     the project's open set is replaced — unless `truncated`, when the issues beyond the shown ones are
//     kept; a re-sent or older event of the same runner (its own clock) changes nothing;
//   - an `issues.refresh` answer (the runner read the open set on request; runners/hub.ts): replaced;
//   - an `issues` App delivery (hook.ts): that one row at once; one older than the row (GitHub's
//     updated_at) changes nothing.
// Whatever changed a project's queue tells its Fleet page to read again (live notice `fleet`).
// GET /api/projects/:projectId/queue answers it with the slot working on each issue now (fleet.ts).
import * as z from 'zod';
import type { ProjectQueue } from '../../protocol/api/queue.ts';
import { publish } from '../live/publish.ts';
import { sql } from '../lib/db/index.ts';
import type { Db, Queryable } from '../lib/db/index.ts';
import type { Logger } from '../lib/log.ts';
import { fleetView } from '../projects/fleet.ts';

/** What the live notice says changed. */
export const QUEUE_KIND = 'codehost.queue';
/** How long an issue a delivery closed stays in the answer (the next full poll drops it anyway). */
const CLOSED_SHOWN = '1 day';

const issueIn = z.object({
  number: z.number().int().positive().max(2 ** 31 - 1),
  title: z.string().max(1024),
  url: z.string().max(2048),
  labels: z.array(z.string().max(256)).max(100).default([]),
});
export type IssueIn = z.output<typeof issueIn>;
/** A runner's `codehost.queue` payload, and an `issues.refresh` answer (which lists every issue). */
const queueIn = z.object({ issues: z.array(issueIn).max(5000), truncated: z.boolean().default(false) });

/** GitHub's issue as an `issues` delivery carries it (the fields read here). */
const deliveredIssue = z.object({
  number: z.number().int().positive().max(2 ** 31 - 1),
  title: z.string().max(1024),
  html_url: z.string().max(2048),
  state: z.enum(['open', 'closed']),
  labels: z.array(z.union([z.string(), z.object({ name: z.string() })])).max(100).default([]),
  updated_at: z.iso.datetime({ offset: true }).optional(),
});
const ISSUE_ACTIONS = new Set(['opened', 'edited', 'labeled', 'unlabeled', 'closed', 'reopened', 'deleted', 'transferred']);

const notify = (q: Queryable, projectId: string) => publish(q, { type: 'fleet', projectId, kind: QUEUE_KIND }, { projectId });

/**
 * Replace a project's open set (or, truncated, add to it). `from` names the runner and its clock for a
 * `codehost.queue` event: one not newer than the last applied from that runner changes nothing.
 */
export async function replaceQueue(q: Queryable, projectId: string, issues: IssueIn[], o: { truncated: boolean; from?: { runnerId: string; at: Date } }): Promise<boolean> {
  const from = o.from ?? null;
  const [fresh] = await q.query(sql`
    insert into codehost_queues as c (project_id, refreshed_at, runner_id, polled_at)
    values (${projectId}, now(), ${from?.runnerId ?? null}::text, ${from?.at ?? null}::timestamptz)
    on conflict (project_id) do update set refreshed_at = now(),
           runner_id = coalesce(excluded.runner_id, c.runner_id), polled_at = case when excluded.runner_id is null then c.polled_at else excluded.polled_at end
     where excluded.runner_id is null or c.runner_id is distinct from excluded.runner_id or c.polled_at is null or c.polled_at < excluded.polled_at
    returning 1`);
  if (!fresh) return false;
  const rows = issues.map((i) => ({ number: i.number, title: i.title, url: i.url, labels: i.labels }));
  const [r] = await q.query<{ changed: number }>(sql`
    with x as (select * from jsonb_to_recordset(${sql.json(rows)}) as x(number int, title text, url text, labels jsonb)),
    up as (
      insert into codehost_issues as i (project_id, number, title, url, labels, state)
      select ${projectId}, x.number, x.title, x.url, x.labels, 'open' from x
      on conflict (project_id, number) do update set title = excluded.title, url = excluded.url, labels = excluded.labels, state = 'open', updated_at = now()
       where (i.title, i.url, i.labels, i.state) is distinct from (excluded.title, excluded.url, excluded.labels, 'open')
      returning 1),
    gone as (
      delete from codehost_issues where project_id = ${projectId} and not ${o.truncated}::boolean and number not in (select number from x)
      returning 1)
    select ((select count(*) from up) + (select count(*) from gone))::int as changed`);
  // refreshedAt moved even when no issue did: the page shows when the queue was last read.
  await notify(q, projectId);
  return r.changed > 0;
}

/** The `codehost.queue` events of one runner's batch (events/sinks/codehost.ts), for projects it serves. */
export async function queueEvents(tx: Queryable, runnerId: string, events: { ts: string; payload: Record<string, unknown> }[], mine: ReadonlySet<string>): Promise<void> {
  for (const e of events) {
    const projectId = e.payload.project;
    const parsed = queueIn.safeParse(e.payload);
    if (typeof projectId !== 'string' || !mine.has(projectId) || !parsed.success) continue;
    await replaceQueue(tx, projectId, parsed.data.issues, { truncated: parsed.data.truncated, from: { runnerId, at: new Date(e.ts) } });
  }
}

/**
 * A runner answered a command: when it was `issues.refresh` for a project it serves, its answer (every
 * open issue) replaces the queue. Never throws (the answer is already stored for its requester).
 */
export async function refreshAnswered(db: Db, log: Logger, runnerId: string, requestId: string): Promise<void> {
  try {
    const [row] = await db.query<{ project_id: string; result: unknown }>(sql`
      select p.id as project_id, c.result from runner_commands c join projects p on p.id = c.args ->> 'projectId' and p.runner_id = c.runner_id
       where c.request_id = ${requestId} and c.runner_id = ${runnerId} and c.name = 'issues.refresh' and c.status = 'done'`);
    if (!row) return;
    const parsed = queueIn.safeParse({ ...(row.result as object), truncated: false });
    if (!parsed.success) return log.warn('an issues.refresh answer is not a queue; the queue is left as it was', { runnerId, requestId });
    await db.transaction((tx) => replaceQueue(tx, row.project_id, parsed.data.issues, { truncated: false }));
  } catch (err) {
    log.error('could not record an issues.refresh answer as the queue', { runnerId, requestId, error: err instanceof Error ? err.message : String(err) });
  }
}

/** An issue as a code host's hook shows it (GitHub's `issues`/`issue_comment`, GitLab's Issue and Note hooks). */
export interface SeenIssue {
  number: number;
  title: string;
  url: string;
  labels: string[];
  state: 'open' | 'closed';
  /** The host's updated_at: a hook older than the row changes nothing. */
  updatedAt: string | null;
}

/**
 * A hook's issue applied to the queue rows of the projects at once, unless older than the row: `upsert`
 * (opened, edited, labelled, closed, reopened), `delete` (deleted, transferred), or `refresh` (a comment:
 * its issue is the whole issue as it is now, so a row the queue already holds takes its title, labels,
 * state and updated_at — but a comment never adds an issue: it may be on a pull request, or on an issue
 * closed long ago; the open set comes from polls and issue hooks).
 */
export async function applyIssue(q: Queryable, projectIds: string[], i: SeenIssue, how: 'upsert' | 'delete' | 'refresh'): Promise<number> {
  if (projectIds.length === 0) return 0;
  const at = i.updatedAt;
  const labels = sql.json(i.labels);
  const changed =
    how === 'delete'
      ? await q.query<{ project_id: string }>(sql`delete from codehost_issues where project_id = any(${projectIds}) and number = ${i.number} returning project_id`)
      : how === 'refresh'
        ? await q.query<{ project_id: string }>(sql`
            update codehost_issues c set title = ${i.title}, url = ${i.url}, labels = ${labels},
                   state = ${i.state}, gh_updated_at = coalesce(${at}::timestamptz, c.gh_updated_at), updated_at = now()
             where c.project_id = any(${projectIds}) and c.number = ${i.number}
               and (c.gh_updated_at is null or ${at}::timestamptz is null or c.gh_updated_at <= ${at}::timestamptz)
            returning c.project_id`)
        : await q.query<{ project_id: string }>(sql`
            insert into codehost_issues as c (project_id, number, title, url, labels, state, gh_updated_at)
            select p, ${i.number}, ${i.title}, ${i.url}, ${labels}, ${i.state}, ${at}::timestamptz
              from unnest(${projectIds}::text[]) as p
            on conflict (project_id, number) do update set title = excluded.title, url = excluded.url, labels = excluded.labels, state = excluded.state,
                   gh_updated_at = coalesce(excluded.gh_updated_at, c.gh_updated_at), updated_at = now()
             where c.gh_updated_at is null or excluded.gh_updated_at is null or c.gh_updated_at <= excluded.gh_updated_at
            returning project_id`);
  for (const p of new Set(changed.map((r) => r.project_id))) await notify(q, p);
  return changed.length;
}

/** GitHub's issue of a delivery, as the queue keeps it. */
const seen = (i: z.output<typeof deliveredIssue>): SeenIssue => ({
  number: i.number,
  title: i.title,
  url: i.html_url,
  labels: i.labels.map((l) => (typeof l === 'string' ? l : l.name)),
  state: i.state,
  updatedAt: i.updated_at ?? null,
});

/** An `issues` delivery for the projects of its repository: that row at once, unless older than it. */
export async function issueDelivery(q: Queryable, projectIds: string[], action: string | null, body: unknown): Promise<number> {
  const parsed = deliveredIssue.safeParse((body as { issue?: unknown } | null)?.issue);
  if (!action || !ISSUE_ACTIONS.has(action) || !parsed.success) return 0;
  return applyIssue(q, projectIds, seen(parsed.data), action === 'deleted' || action === 'transferred' ? 'delete' : 'upsert');
}

/** An `issue_comment` delivery: the row of its issue refreshed, never added (applyIssue `refresh`). */
export async function issueCommentDelivery(q: Queryable, projectIds: string[], body: unknown): Promise<number> {
  const issue = (body as { issue?: { pull_request?: unknown } } | null)?.issue;
  const parsed = deliveredIssue.safeParse(issue);
  if (!parsed.success || issue?.pull_request !== undefined) return 0;
  return applyIssue(q, projectIds, seen(parsed.data), 'refresh');
}

/** GET /api/projects/:projectId/queue. */
export async function readQueue(db: Queryable, projectId: string, runnerId: string | null): Promise<ProjectQueue> {
  const rows = await db.query<{ number: number; title: string; url: string; labels: string[]; state: 'open' | 'closed'; at: Date }>(sql`
    select number, title, url, labels, state, coalesce(gh_updated_at, updated_at) as at from codehost_issues
     where project_id = ${projectId} and (state = 'open' or updated_at > now() - ${CLOSED_SHOWN}::interval)
     order by number`);
  const [queue] = await db.query<{ refreshed_at: Date }>(sql`select refreshed_at from codehost_queues where project_id = ${projectId}`);
  const working = new Map<number, string>();
  for (const s of (await fleetView(db, runnerId, projectId)).slots) if (s.issue !== null && !s.stopped) working.set(s.issue, s.slot);
  return {
    issues: rows.map((r) => ({ number: r.number, title: r.title, url: r.url, labels: r.labels, state: r.state, slot: working.get(r.number) ?? null, updatedAt: new Date(r.at).toISOString() })),
    refreshedAt: queue ? new Date(queue.refreshed_at).toISOString() : null,
  };
}

// What a GitLab hook says, applied to the server's state at once (issue 42; docs/gitlab.md "Webhook"), as a
// GitHub App delivery is (hook.ts): before the hook answers, and through the same arbiters — the queue
// rows (queue.ts applyIssue) and the pull request state (pulls.ts observe, which emits pr.* events on a
// transition only) — so the runner's poll, sent right after as the safety net, and the timed polls see
// the same change as no change and emit nothing again.
//   Issue Hook, Confidential Issue Hook   the issue's queue row: open, update, reopen, close
//   Note Hook on an issue                 that row's title, labels and state (a note never adds an issue)
//   Merge Request Hook                    the merge request's state: `open`/`reopen` may open it, `merge`
//                                         merges, `close` closes; every action refreshes title, branch, head
//   Pipeline Hook                         the checks of the pipeline's commit from its jobs (each name's
//                                         latest attempt, mapped as the runner maps them: protocol/checks.ts
//                                         jobState), on the open merge requests the server knows — the one
//                                         the hook names and those with that head commit
// Anything else (Job Hook, Push Hook, a body svc cannot read) waits for the poll. A hook older than the
// state (GitLab's updated_at) changes nothing.
import * as z from 'zod';
import { checksSummary, jobState, overall } from '../../protocol/checks.ts';
import type { Check } from '../../protocol/checks.ts';
import { sql } from '../lib/db/index.ts';
import type { Db } from '../lib/db/index.ts';
import { observe } from './pulls.ts';
import type { PullState } from './pulls.ts';
import { applyIssue } from './queue.ts';

const iid = z.number().int().positive().max(2 ** 31 - 1);
const SHA = /^[0-9a-f]{40}$/;
const text = (max: number) => z.string().max(max);
/** GitLab's hooks write times as ISO 8601 or as `2026-11-29 10:00:00 UTC` (`+0100`): either, as ISO; else null. */
function glTime(v: unknown): string | null {
  if (typeof v !== 'string' || v.length > 40) return null;
  const m = /^(\d{4}-\d{2}-\d{2})[ T](\d{2}:\d{2}:\d{2}(?:\.\d+)?)\s*(Z|UTC|[+-]\d{2}:?\d{2})?$/.exec(v.trim());
  if (!m) return null;
  const zone = !m[3] || m[3] === 'UTC' || m[3] === 'Z' ? 'Z' : m[3].includes(':') ? m[3] : `${m[3].slice(0, 3)}:${m[3].slice(3)}`;
  const t = Date.parse(`${m[1]}T${m[2]}${zone}`);
  return Number.isNaN(t) ? null : new Date(t).toISOString();
}
const labels = z.array(z.object({ title: text(256) })).max(100).nullable().optional();
const issueAttrs = z.object({ iid, title: text(1024), url: text(2048), state: z.string().max(32), action: z.string().max(32).optional(), updated_at: z.unknown().optional(), labels });
const issueHook = z.object({ object_attributes: issueAttrs, labels });
/** A Note Hook's issue has no url: the note's, without its `#note_<id>`. */
const noteHook = z.object({ object_attributes: z.object({ noteable_type: z.string().max(32), url: text(2048) }), issue: issueAttrs.omit({ action: true, url: true }).optional() });
const mrHook = z.object({
  object_attributes: z.object({
    iid,
    title: text(1024),
    url: text(2048),
    state: z.string().max(32),
    action: z.string().max(32).optional(),
    source_branch: text(256),
    updated_at: z.unknown().optional(),
    last_commit: z.object({ id: z.string().regex(SHA) }).nullable().optional(),
  }),
});
const pipelineHook = z.object({
  object_attributes: z.object({ id: z.number().int(), sha: z.string().regex(SHA), status: z.string().max(64), created_at: z.unknown().optional(), finished_at: z.unknown().optional() }),
  merge_request: z.object({ iid }).nullable().optional(),
  builds: z.array(z.object({ id: z.number().int(), name: text(256), status: z.string().max(64), allow_failure: z.boolean().default(false) })).max(1000).default([]),
});

const issueOf = (a: z.output<typeof issueAttrs>, top?: z.output<typeof labels>) => ({
  number: a.iid,
  title: a.title,
  url: a.url,
  labels: (top ?? a.labels ?? []).map((l) => l.title),
  state: a.state === 'opened' ? ('open' as const) : ('closed' as const),
  updatedAt: glTime(a.updated_at),
});

const mrState = (s: string): PullState => (s === 'merged' ? 'merged' : s === 'opened' || s === 'locked' ? 'open' : 'closed');

/** Each job name's latest attempt (the highest id): a retried job counts once, with its retry's status. */
function pipelineChecks(builds: z.output<typeof pipelineHook>['builds']): Check[] {
  const latest = new Map<string, (typeof builds)[number]>();
  for (const b of builds) if ((latest.get(b.name)?.id ?? -1) < b.id) latest.set(b.name, b);
  return [...latest.values()].sort((a, b) => a.id - b.id).map((b) => ({ name: b.name, state: jobState(b.status, b.allow_failure), url: null }));
}

/** Apply a verified, first-seen GitLab hook of `projectId`; what it changed ('queue', 'pull', 'checks', or null). */
export async function applyGitlabHook(db: Db, projectId: string, event: string, body: unknown): Promise<'queue' | 'pull' | 'checks' | null> {
  if (event === 'Issue Hook' || event === 'Confidential Issue Hook') {
    const h = issueHook.safeParse(body);
    if (!h.success) return null;
    await applyIssue(db, [projectId], issueOf(h.data.object_attributes, h.data.labels), 'upsert');
    return 'queue';
  }
  if (event === 'Note Hook' || event === 'Confidential Note Hook') {
    const h = noteHook.safeParse(body);
    if (!h.success || h.data.object_attributes.noteable_type !== 'Issue' || !h.data.issue) return null;
    await applyIssue(db, [projectId], issueOf({ ...h.data.issue, url: h.data.object_attributes.url.replace(/#.*$/, '') }), 'refresh');
    return 'queue';
  }
  if (event === 'Merge Request Hook') {
    const h = mrHook.safeParse(body);
    if (!h.success) return null;
    const a = h.data.object_attributes;
    const opening = a.action === 'open' || a.action === 'reopen';
    await db.transaction((tx) =>
      observe(tx, projectId, { source: 'app', number: a.iid, state: mrState(a.state), opening, title: a.title, url: a.url, branch: a.source_branch, sha: a.last_commit?.id ?? null, updatedAt: glTime(a.updated_at), ts: new Date() }),
    );
    return 'pull';
  }
  if (event === 'Pipeline Hook') {
    const h = pipelineHook.safeParse(body);
    if (!h.success) return null;
    const p = h.data;
    const checks = pipelineChecks(p.builds);
    if (!checks.length) return null;
    // Only merge requests the server knows open, at this head: checks never open one (its pr.opened comes
    // from its own hook or the poll, whichever is first, even when the pipeline's hook came before), and a
    // pipeline of an older commit is not the merge request's state.
    const known = await db.query<{ number: number }>(sql`
      select number from codehost_pulls where project_id = ${projectId} and state = 'open'
         and (head_sha = ${p.object_attributes.sha} or (head_sha is null and number = ${p.merge_request?.iid ?? 0}))`);
    const targets = known.map((k) => k.number);
    const seen = { state: overall(checks), summary: checksSummary(checks), sha: p.object_attributes.sha, at: glTime(p.object_attributes.finished_at) ?? glTime(p.object_attributes.created_at) };
    for (const n of targets) await db.transaction((tx) => observe(tx, projectId, { source: 'app', number: n, checks: seen, ts: new Date() }));
    return targets.length ? 'checks' : null;
  }
  return null;
}

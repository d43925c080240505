// App deliveries about pull requests → observations of their state (pulls.ts), for each project of the
// delivery's repository (docs/github-app.md, "What a delivery does"):
//   pull_request, pull_request_review   the pull request as the payload shows it (state, merged, title,
//                                       head, updated_at), before the hook answers: no network involved;
//   check_suite, check_run, status      the overall checks of the head commit, read with the App's
//                                       installation token for the repository — its check runs and its
//                                       combined status, mapped as the runner's poll maps them
//                                       (protocol/checks.ts) — after the answer. Without a usable token
//                                       (no key, not installed) nothing happens here: the runner's poll,
//                                       sent for every delivery anyway, reports the checks.
// Only open pull requests whose head is the commit checked are observed (a check of an older commit is
// not the pull request's state): those the delivery names, and those the server knows with that head.
import * as z from 'zod';
import { checkRuns, checksOfCommit, checksSummary, combinedStatus, overall } from '../../protocol/checks.ts';
import { sql } from '../lib/db/index.ts';
import type { Db } from '../lib/db/index.ts';
import { forgetToken, githubCall, installationToken } from './app-token.ts';
import type { AppDeps } from './app-token.ts';
import type { AppRow } from './apps.ts';
import { observe } from './pulls.ts';

export const PULL_EVENTS = new Set(['pull_request', 'pull_request_review']);
export const CHECK_EVENTS = new Set(['check_suite', 'check_run', 'status']);

const SHA = /^[0-9a-f]{40}$/;
const number = z.number().int().positive().max(2 ** 31 - 1);
const time = z.iso.datetime({ offset: true });
const deliveredPull = z.object({
  number,
  state: z.enum(['open', 'closed']),
  merged: z.boolean().nullable().optional(),
  merged_at: z.string().nullable().optional(),
  title: z.string().max(1024),
  html_url: z.string().max(2048),
  updated_at: time,
  head: z.object({ ref: z.string().max(256), sha: z.string().regex(SHA) }),
});
const checked = z.object({
  head_sha: z.string().regex(SHA),
  updated_at: time.nullable().optional(),
  completed_at: time.nullable().optional(),
  pull_requests: z.array(z.object({ number, head: z.object({ sha: z.string() }) })).max(100).default([]),
});

/** pull_request or pull_request_review: the pull request as the payload shows it, in each project. */
export async function pullDelivery(db: Db, projectIds: string[], event: string, action: string | null, body: unknown): Promise<void> {
  const parsed = deliveredPull.safeParse((body as { pull_request?: unknown } | null)?.pull_request);
  if (!parsed.success) return;
  const p = parsed.data;
  const state = p.merged || p.merged_at ? 'merged' : p.state;
  const opening = event === 'pull_request' && (action === 'opened' || action === 'reopened');
  for (const projectId of projectIds) {
    await db.transaction((tx) =>
      observe(tx, projectId, { source: 'app', number: p.number, state, opening, title: p.title, url: p.html_url, branch: p.head.ref, sha: p.head.sha, updatedAt: p.updated_at, ts: new Date() }),
    );
  }
}

/** The checks of a commit with the App's installation token for the repository; null when they cannot be read. */
async function readChecks(deps: AppDeps, app: AppRow, repo: string, sha: string) {
  const token = await installationToken(deps, app, repo);
  if (!token.ok) return null;
  const base = `/repos/${repo.split('/').map(encodeURIComponent).join('/')}/commits/${sha}`;
  const runs = await githubCall(deps, app, 'GET', `${base}/check-runs?per_page=100`, token.value.token, `the check runs of ${repo}@${sha.slice(0, 7)}`);
  const status = runs.ok ? await githubCall(deps, app, 'GET', `${base}/status`, token.value.token, `the combined status of ${repo}@${sha.slice(0, 7)}`) : runs;
  if (!runs.ok || !status.ok) {
    const error = !runs.ok ? runs.error : !status.ok ? status.error : null;
    if (error?.status === 401) await forgetToken(deps.db, app.id, repo); // revoked before its expiry: the next delivery mints
    deps.log?.warn('github app: could not read the checks of a delivery; the runner poll reports them', { appId: app.id, repo, code: error?.code, message: error?.message });
    return null;
  }
  const r = checkRuns.safeParse(runs.value);
  const s = combinedStatus.safeParse(status.value);
  if (!r.success || !s.success) return null;
  return checksOfCommit(r.data.check_runs, s.data.statuses);
}

/** The commit a check delivery is about, and the pull requests it names (a `status` names none). */
function subjectOf(event: string, body: unknown) {
  const b = (body ?? {}) as Record<string, unknown>;
  return checked.safeParse(event === 'status' ? { head_sha: b.sha, updated_at: b.updated_at } : b[event]);
}

/**
 * check_suite, check_run or status: the commit's overall checks, observed on each open pull request
 * whose head it is — those the delivery names, and those the server knows with that head (a fork's
 * pull request is not named in the delivery; a commit status names none) — in each project.
 */
export async function checksDelivery(deps: AppDeps, app: AppRow, repo: string, projectIds: string[], event: string, body: unknown): Promise<void> {
  try {
    const parsed = subjectOf(event, body);
    if (!parsed.success) return;
    const c = parsed.data;
    const named = c.pull_requests.filter((p) => p.head.sha === c.head_sha).map((p) => p.number);
    const known = await deps.db.query<{ project_id: string; number: number }>(sql`
      select project_id, number from codehost_pulls where project_id = any(${projectIds}) and head_sha = ${c.head_sha} and state = 'open'`);
    const targets = projectIds.flatMap((p) => [...new Set([...named, ...known.filter((k) => k.project_id === p).map((k) => k.number)])].map((n) => ({ projectId: p, n })));
    if (!targets.length) return;
    const checks = await readChecks(deps, app, repo, c.head_sha);
    if (!checks) return;
    const seen = { state: overall(checks), summary: checksSummary(checks), sha: c.head_sha, at: c.completed_at ?? c.updated_at ?? null };
    for (const t of targets) await deps.db.transaction((tx) => observe(tx, t.projectId, { source: 'app', number: t.n, checks: seen, ts: new Date() }));
  } catch (err) {
    deps.log?.error('could not apply the checks of a code-host delivery; the runner poll will', { appId: app.id, repo, error: err instanceof Error ? err.message : String(err) });
  }
}

// The few GitHub REST shapes the runner reads (only the fields it uses; the rest is ignored), and the
// calls built on them: open issues, open pull requests, a head commit's checks (check runs and the
// combined status), one pull request, its files, reviews, and creating issues and pull requests.
import * as z from 'zod';
import type { GitHubClient } from './client.ts';
import { checkRuns, checksOfCommit, combinedStatus } from '../../protocol/checks.ts';
import type { Check } from '../../protocol/checks.ts';

const user = z.object({ login: z.string() }).nullable().optional();
const label = z.union([z.string(), z.object({ name: z.string() })]);

export const issueShape = z.object({
  number: z.number().int(),
  title: z.string(),
  html_url: z.string(),
  state: z.string(),
  labels: z.array(label).default([]),
  user,
  updated_at: z.string().optional(),
  body: z.string().nullable().optional(),
  /** The issues list also returns pull requests; those carry this key. */
  pull_request: z.unknown().optional(),
});

export const pullShape = z.object({
  number: z.number().int(),
  title: z.string(),
  html_url: z.string(),
  state: z.string(),
  draft: z.boolean().optional(),
  merged_at: z.string().nullable().optional(),
  merged: z.boolean().optional(),
  mergeable: z.boolean().nullable().optional(),
  mergeable_state: z.string().optional(),
  head: z.object({ ref: z.string(), sha: z.string() }),
  body: z.string().nullable().optional(),
  base: z.object({ ref: z.string() }),
  user,
});
export type Pull = z.infer<typeof pullShape>;

const commentShape = z.object({ user, body: z.string().nullable().optional(), created_at: z.string().nullable().optional() });
const fileShape = z.object({ filename: z.string(), status: z.string(), additions: z.number().int(), deletions: z.number().int(), changes: z.number().int().optional() });
const reviewShape = z.object({ id: z.number(), user, state: z.string(), submitted_at: z.string().nullable().optional() });
const repoShape = z.object({ default_branch: z.string(), full_name: z.string().optional() });

// The four check states and how runs and statuses map to them are shared with the server (protocol/checks.ts).
export type { Check, CheckState } from '../../protocol/checks.ts';
export { checkState, overall } from '../../protocol/checks.ts';

const repoPath = (repo: string) => `/repos/${repo.split('/').map(encodeURIComponent).join('/')}`;

export interface CallOptions {
  urgent?: boolean;
}

/** Open issues (the queue), pull requests left out. */
export async function openIssues(c: GitHubClient, repo: string, o: CallOptions = {}) {
  const r = await c.paginate(`${repoPath(repo)}/issues?state=open&per_page=100`, issueShape, 10, o.urgent);
  return { ...r, items: r.items.filter((i) => i.pull_request === undefined) };
}

export const openPulls = (c: GitHubClient, repo: string, o: CallOptions = {}) => c.paginate(`${repoPath(repo)}/pulls?state=open&per_page=100`, pullShape, 10, o.urgent);

export async function pull(c: GitHubClient, repo: string, n: number, o: CallOptions = {}): Promise<Pull | null> {
  const a = await c.request('GET', `${repoPath(repo)}/pulls/${n}`, { schema: pullShape, accept: [404, 410], urgent: o.urgent });
  return a.status >= 400 ? null : a.data;
}

/** The head commit's checks: its check runs and its commit statuses (the combined status). */
export async function checksOf(c: GitHubClient, repo: string, sha: string, o: CallOptions = {}): Promise<Check[]> {
  const runs = await c.request('GET', `${repoPath(repo)}/commits/${encodeURIComponent(sha)}/check-runs?per_page=100`, { schema: checkRuns, urgent: o.urgent });
  const status = await c.request('GET', `${repoPath(repo)}/commits/${encodeURIComponent(sha)}/status`, { schema: combinedStatus, urgent: o.urgent });
  return checksOfCommit(runs.data.check_runs, status.data.statuses);
}

/** One issue (or pull request: GitHub numbers them alike) and its comments, oldest first. */
export async function issueWithComments(c: GitHubClient, repo: string, n: number, o: CallOptions = {}) {
  const a = await c.request('GET', `${repoPath(repo)}/issues/${n}`, { schema: issueShape, accept: [404, 410], urgent: o.urgent });
  if (a.status >= 400) return null;
  const comments = await c.paginate(`${repoPath(repo)}/issues/${n}/comments?per_page=100`, commentShape, 10, o.urgent);
  return { issue: a.data, comments };
}

export const pullFiles = (c: GitHubClient, repo: string, n: number) => c.paginate(`${repoPath(repo)}/pulls/${n}/files?per_page=100`, fileShape, 100, true);
export const pullReviews = (c: GitHubClient, repo: string, n: number) => c.paginate(`${repoPath(repo)}/pulls/${n}/reviews?per_page=100`, reviewShape, 10, true);

export async function createIssue(c: GitHubClient, repo: string, body: { title: string; body: string; labels?: string[] }) {
  const a = await c.request('POST', `${repoPath(repo)}/issues`, { schema: issueShape, body, urgent: true });
  return { number: a.data.number, url: a.data.html_url };
}

export async function defaultBranch(c: GitHubClient, repo: string, token?: string): Promise<string> {
  return (await c.request('GET', repoPath(repo), { schema: repoShape, urgent: true, token })).data.default_branch;
}

/** An open pull request from `branch` (owner:branch), if one exists already. */
export async function pullFromBranch(c: GitHubClient, repo: string, branch: string, token?: string): Promise<Pull | null> {
  const owner = repo.split('/')[0];
  const a = await c.request('GET', `${repoPath(repo)}/pulls?state=open&head=${encodeURIComponent(`${owner}:${branch}`)}`, { schema: z.array(pullShape), urgent: true, token });
  return a.data[0] ?? null;
}

export async function createPull(c: GitHubClient, repo: string, body: { title: string; body: string; head: string; base: string }, token?: string) {
  return (await c.request('POST', `${repoPath(repo)}/pulls`, { schema: pullShape, body, urgent: true, token })).data;
}

/** Squash-merge a pull request (`PUT …/pulls/:n/merge`) with the head it was approved at when given. */
export async function mergePull(c: GitHubClient, repo: string, n: number, token?: string) {
  return (await c.request('PUT', `${repoPath(repo)}/pulls/${n}/merge`, { schema: z.object({ sha: z.string().nullish(), merged: z.boolean() }), body: { merge_method: 'squash' }, urgent: true, token })).data;
}

/** Delete a merged pull request's head branch (`DELETE …/git/refs/heads/<branch>`); 404/422: already gone. */
export async function deleteBranch(c: GitHubClient, repo: string, branch: string, token?: string): Promise<boolean> {
  const a = await c.request('DELETE', `${repoPath(repo)}/git/refs/heads/${branch.split('/').map(encodeURIComponent).join('/')}`, { schema: z.unknown(), urgent: true, token, accept: [404, 422] });
  return a.status < 300;
}

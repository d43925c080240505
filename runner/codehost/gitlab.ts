// GitLab's REST v4 behind the code-host adapter (adapter.ts; issue 42; docs/gitlab.md): gitlab.com or
// a self-managed instance at `<baseUrl>/api/v4` (a path prefix allowed), a project by its full path
// (nested groups: `group/sub/app`, URL-encoded as one path segment). Only the fields read are declared.
//   queue         GET  /projects/:id/issues?state=opened                 (labels are names)
//   one issue     GET  /projects/:id/issues/:iid and …/notes (system notes left out)
//   pull requests GET  /projects/:id/merge_requests?state=opened          (iid is the number)
//   checks        GET  /projects/:id/pipelines?sha=<head>  → the newest pipeline's jobs (retried jobs
//                 left out: only each job's latest attempt counts, so a retry changes the checks once)
//   approvals     GET/POST /projects/:id/merge_requests/:iid/approvals|approve
//   merge         PUT  /projects/:id/merge_requests/:iid/merge (GitLab's refusal said as it is)
// Pagination is by `Link` or `x-next-page` (client.ts), 429 + Retry-After blocks like GitHub's limit.
import { rewriteCostBlock } from '../../protocol/cost-block.ts';
import * as z from 'zod';
import { jobState } from '../../protocol/checks.ts';
import type { Check } from '../../protocol/checks.ts';

export { jobState } from '../../protocol/checks.ts';
import type { HostAdapter, PullState } from './adapter.ts';
import { CodeHostError } from './client.ts';
import type { GitHubClient } from './client.ts';

const user = z.object({ username: z.string() }).nullable().optional();
export const glIssue = z.object({
  iid: z.number().int(),
  title: z.string(),
  web_url: z.string(),
  state: z.string(),
  labels: z.array(z.string()).default([]),
  description: z.string().nullable().optional(),
  author: user,
});
const glNote = z.object({ body: z.string(), author: user, created_at: z.string().optional(), system: z.boolean().default(false) });
export const glMergeRequest = z.object({
  iid: z.number().int(),
  title: z.string(),
  web_url: z.string(),
  state: z.string(),
  draft: z.boolean().optional(),
  source_branch: z.string(),
  target_branch: z.string(),
  sha: z.string().nullable(),
  detailed_merge_status: z.string().optional(),
  merge_status: z.string().optional(),
  has_conflicts: z.boolean().optional(),
  merge_commit_sha: z.string().nullable().optional(),
  description: z.string().nullable().optional(),
});
type MergeRequest = z.infer<typeof glMergeRequest>;
const glPipeline = z.object({ id: z.number().int(), status: z.string(), sha: z.string() });
const glJob = z.object({ id: z.number().int(), name: z.string(), status: z.string(), web_url: z.string().optional(), allow_failure: z.boolean().default(false) });
const glDiff = z.object({ old_path: z.string(), new_path: z.string(), new_file: z.boolean(), renamed_file: z.boolean(), deleted_file: z.boolean(), diff: z.string() });
const glApprovals = z.object({ approved: z.boolean().optional(), approved_by: z.array(z.object({ user })).default([]) });
export const glProject = z.object({ id: z.number().int(), path_with_namespace: z.string(), default_branch: z.string().nullable(), web_url: z.string() });

/** `/projects/<group%2Fsub%2Fapp>`: the full path as one URL-encoded segment. */
export const projectPath = (path: string) => `/projects/${encodeURIComponent(path)}`;

const mrState = (s: string): PullState['state'] => (s === 'merged' ? 'merged' : s === 'opened' || s === 'locked' ? 'open' : 'closed');

function pullState(mr: MergeRequest): PullState {
  const status = mr.detailed_merge_status ?? mr.merge_status ?? null;
  return {
    number: mr.iid,
    title: mr.title,
    url: mr.web_url,
    state: mrState(mr.state),
    branch: mr.source_branch,
    base: mr.target_branch,
    sha: mr.sha ?? '',
    draft: mr.draft ?? false,
    mergeable: mr.has_conflicts ? false : status === 'mergeable' || status === 'can_be_merged' ? true : status === null || /checking|unchecked/.test(status) ? null : false,
    mergeableState: status,
  };
}

/** Added and removed lines of a unified diff. */
function counts(diff: string): { additions: number; deletions: number } {
  let additions = 0;
  let deletions = 0;
  for (const line of diff.split('\n')) {
    if (line.startsWith('+') && !line.startsWith('+++')) additions++;
    else if (line.startsWith('-') && !line.startsWith('---')) deletions++;
  }
  return { additions, deletions };
}

/** GitLab's refusal of an approval or a merge, said as the reason a person can act on. */
function refusal(what: 'approve' | 'merge', e: unknown): never {
  if (!(e instanceof CodeHostError) || e.code !== 'http') throw e;
  const reasons: Record<number, string> = {
    401: what === 'approve' ? 'the token may not approve (or already approved) this merge request' : 'the token was refused',
    403: `the token may not ${what} this merge request (it needs the api scope and at least the Developer role, or the project's approval rules exclude it)`,
    405: 'GitLab refuses to merge it now: approvals missing, a pipeline that must pass, a draft, or unresolved discussions',
    406: 'the branch cannot be merged (conflicts)',
    409: 'the merge request changed since it was inspected (its head moved)',
    422: 'GitLab refused the merge request as it is',
  };
  throw new CodeHostError('http', `${reasons[e.status ?? 0] ?? `GitLab refused to ${what}`} (${e.message})`, e.status);
}

export function gitlabAdapter(client: GitHubClient, baseUrl: string): HostAdapter {
  const checks = async (repo: string, sha: string, o: { urgent?: boolean; token?: string }): Promise<Check[]> => {
    if (!sha) return [];
    const p = await client.request('GET', `${projectPath(repo)}/pipelines?sha=${encodeURIComponent(sha)}&order_by=id&sort=desc&per_page=1`, { schema: z.array(glPipeline), ...o });
    const newest = p.data[0];
    if (!newest) return [];
    const jobs = await client.paginate(`${projectPath(repo)}/pipelines/${newest.id}/jobs?per_page=100`, glJob, 10, o.urgent);
    return jobs.items.map((j) => ({ name: j.name, state: jobState(j.status, j.allow_failure), url: j.web_url ?? null }));
  };
  const mr = async (repo: string, n: number, o: { urgent?: boolean; token?: string }) => {
    const a = await client.request('GET', `${projectPath(repo)}/merge_requests/${n}`, { schema: glMergeRequest, accept: [404], ...o });
    return a.status >= 400 ? null : a.data;
  };
  return {
    kind: 'gitlab',
    client,
    git: { host: new URL(baseUrl).hostname, user: 'oauth2' },
    async openIssues(repo, o = {}) {
      const r = await client.paginate(`${projectPath(repo)}/issues?state=opened&per_page=100`, glIssue, 10, o.urgent);
      return { complete: r.complete, items: r.items.map((i) => ({ number: i.iid, title: i.title, url: i.web_url, labels: i.labels })) };
    },
    async openPulls(repo, o = {}) {
      const list = await client.paginate(`${projectPath(repo)}/merge_requests?state=opened&per_page=100`, glMergeRequest, 10, o.urgent);
      const items = [];
      for (const m of list.items) items.push({ number: m.iid, title: m.title, branch: m.source_branch, url: m.web_url, sha: m.sha ?? '', checks: await checks(repo, m.sha ?? '', o) });
      return { items, complete: list.complete };
    },
    async pull(repo, n, o = {}) {
      const m = await mr(repo, n, o);
      return m && pullState(m);
    },
    async issue(repo, n, o = {}) {
      const a = await client.request('GET', `${projectPath(repo)}/issues/${n}`, { schema: glIssue, accept: [404], urgent: o.urgent, token: o.token });
      if (a.status >= 400) return null;
      const notes = await client.paginate(`${projectPath(repo)}/issues/${n}/notes?sort=asc&order_by=created_at&per_page=100`, glNote, 10, o.urgent);
      const i = a.data;
      return {
        number: i.iid,
        title: i.title,
        url: i.web_url,
        state: i.state === 'opened' ? 'open' : 'closed',
        body: i.description ?? '',
        labels: i.labels,
        author: i.author?.username ?? null,
        comments: notes.items.filter((x) => !x.system).map((x) => ({ author: x.author?.username ?? null, body: x.body, createdAt: x.created_at ?? null })),
        commentsComplete: notes.complete,
      };
    },
    async inspect(repo, n, o = {}) {
      const u = { urgent: true, token: o.token };
      const m = await mr(repo, n, u);
      if (!m) return null;
      const diffs = await client.paginate(`${projectPath(repo)}/merge_requests/${n}/diffs?per_page=100`, glDiff, 100, true);
      const approvals = await client.request('GET', `${projectPath(repo)}/merge_requests/${n}/approvals`, { schema: glApprovals, ...u });
      const files = diffs.items.map((d) => ({ path: d.new_path, status: d.new_file ? 'added' : d.deleted_file ? 'removed' : d.renamed_file ? 'renamed' : 'modified', ...counts(d.diff) }));
      return {
        ...pullState(m),
        files,
        filesComplete: diffs.complete,
        additions: files.reduce((s, f) => s + f.additions, 0),
        deletions: files.reduce((s, f) => s + f.deletions, 0),
        checks: await checks(repo, m.sha ?? '', u),
        reviews: approvals.data.approved_by.map((a) => ({ user: a.user?.username ?? null, state: 'APPROVED', submittedAt: null })),
      };
    },
    async createIssue(repo, body, o = {}) {
      const a = await client.request('POST', `${projectPath(repo)}/issues`, { schema: glIssue, urgent: true, token: o.token, body: { title: body.title, description: body.body, ...(body.labels?.length ? { labels: body.labels.join(',') } : {}) } });
      return { number: a.data.iid, url: a.data.web_url };
    },
    async defaultBranch(repo, o = {}) {
      const p = await client.request('GET', projectPath(repo), { schema: glProject, urgent: true, token: o.token });
      if (!p.data.default_branch) throw new CodeHostError('http', `${repo} has no default branch on GitLab (an empty repository)`);
      return p.data.default_branch;
    },
    async pullFromBranch(repo, branch, o = {}) {
      const a = await client.request('GET', `${projectPath(repo)}/merge_requests?state=opened&source_branch=${encodeURIComponent(branch)}`, { schema: z.array(glMergeRequest), urgent: true, token: o.token });
      const m = a.data[0];
      return m ? { number: m.iid, url: m.web_url } : null;
    },
    async createPull(repo, body, o = {}) {
      const a = await client.request('POST', `${projectPath(repo)}/merge_requests`, { schema: glMergeRequest, urgent: true, token: o.token, body: { source_branch: body.head, target_branch: body.base, title: body.title, description: body.body } });
      return { number: a.data.iid, url: a.data.web_url };
    },
    async describe(repo, n, block, o = {}) {
      const m = await mr(repo, n, { urgent: true, token: o.token });
      if (!m) return null;
      const next = rewriteCostBlock(m.description, block);
      if (next === (m.description ?? '')) return { changed: false };
      await client.request('PUT', `${projectPath(repo)}/merge_requests/${n}`, { schema: glMergeRequest, urgent: true, token: o.token, body: { description: next } });
      return { changed: true };
    },
    async approve(repo, n, o = {}) {
      try {
        const a = await client.request('POST', `${projectPath(repo)}/merge_requests/${n}/approve`, { schema: glApprovals, urgent: true, token: o.token });
        return { approved: a.data.approved ?? true };
      } catch (e) {
        refusal('approve', e);
      }
    },
    async merge(repo, n, o = {}) {
      try {
        const a = await client.request('PUT', `${projectPath(repo)}/merge_requests/${n}/merge`, { schema: glMergeRequest, urgent: true, token: o.token, body: { should_remove_source_branch: true } });
        return { merged: a.data.state === 'merged', sha: a.data.merge_commit_sha ?? null };
      } catch (e) {
        refusal('merge', e);
      }
    },
  };
}

// GitHub behind the code-host adapter (adapter.ts): the calls of github.ts, unchanged, in its terms.
import type { HostAdapter, PullState } from './adapter.ts';
import { CodeHostError } from './client.ts';
import type { GitHubClient } from './client.ts';
import { rewriteCostBlock } from '../../protocol/cost-block.ts';
import { checksOf, pullShape, createIssue, createPull, defaultBranch, deleteBranch, issueWithComments, mergePull, openIssues, openPulls, pull, pullFiles, pullFromBranch, pullReviews } from './github.ts';
import type { Pull } from './github.ts';

/** The host a token may be sent to for git over https: github.com for api.github.com, else the API's host. */
export function gitHost(apiUrl: string): string {
  const host = new URL(apiUrl).hostname;
  return host === 'api.github.com' ? 'github.com' : host;
}

const state = (pr: Pull): PullState => ({
  number: pr.number,
  title: pr.title,
  url: pr.html_url,
  state: pr.merged || pr.merged_at ? 'merged' : pr.state === 'open' ? 'open' : 'closed',
  branch: pr.head.ref,
  base: pr.base.ref,
  sha: pr.head.sha,
  draft: pr.draft ?? false,
  mergeable: pr.mergeable ?? null,
  mergeableState: pr.mergeable_state ?? null,
});

/** GitHub's refusal of a merge, said as the reason a person can act on (GitHub's message kept). */
function refusal(e: unknown): never {
  if (!(e instanceof CodeHostError) || e.code !== 'http') throw e;
  const reasons: Record<number, string> = {
    403: 'the token may not merge this pull request (it needs contents: write)',
    404: 'no such pull request, or the token cannot see the repository',
    405: "GitHub refuses to merge it now: the branch protection's required reviews or checks, a draft, or conflicts",
    409: 'the pull request changed since it was inspected (its head moved)',
    422: 'GitHub refused the merge as asked (squash merging may be disabled for the repository)',
  };
  throw new CodeHostError('http', `${reasons[e.status ?? 0] ?? 'GitHub refused to merge'} (${e.message})`, e.status);
}

export function githubAdapter(client: GitHubClient, apiUrl: string): HostAdapter {
  return {
    kind: 'github',
    client,
    git: { host: gitHost(apiUrl), user: 'x-access-token' },
    async openIssues(repo, o = {}) {
      const r = await openIssues(client, repo, o);
      return { complete: r.complete, items: r.items.map((i) => ({ number: i.number, title: i.title, url: i.html_url, labels: i.labels.map((l) => (typeof l === 'string' ? l : l.name)) })) };
    },
    async openPulls(repo, o = {}) {
      const list = await openPulls(client, repo, o);
      const items = [];
      for (const pr of list.items) items.push({ number: pr.number, title: pr.title, branch: pr.head.ref, url: pr.html_url, sha: pr.head.sha, checks: await checksOf(client, repo, pr.head.sha, o) });
      return { items, complete: list.complete };
    },
    async pull(repo, n, o = {}) {
      const pr = await pull(client, repo, n, o);
      return pr && state(pr);
    },
    async issue(repo, n, o = {}) {
      const r = await issueWithComments(client, repo, n, o);
      if (!r) return null;
      const i = r.issue;
      return {
        number: i.number,
        title: i.title,
        url: i.html_url,
        state: i.state === 'open' ? 'open' : 'closed',
        body: i.body ?? '',
        labels: i.labels.map((l) => (typeof l === 'string' ? l : l.name)),
        author: i.user?.login ?? null,
        comments: r.comments.items.map((c) => ({ author: c.user?.login ?? null, body: c.body ?? '', createdAt: c.created_at ?? null })),
        commentsComplete: r.comments.complete,
      };
    },
    async inspect(repo, n) {
      const pr = await pull(client, repo, n, { urgent: true });
      if (!pr) return null;
      const [files, reviews, checks] = [await pullFiles(client, repo, n), await pullReviews(client, repo, n), await checksOf(client, repo, pr.head.sha, { urgent: true })];
      return {
        ...state(pr),
        state: (pr.merged || pr.merged_at ? 'merged' : pr.state) as PullState['state'],
        files: files.items.map((f) => ({ path: f.filename, status: f.status, additions: f.additions, deletions: f.deletions })),
        filesComplete: files.complete,
        additions: files.items.reduce((s, f) => s + f.additions, 0),
        deletions: files.items.reduce((s, f) => s + f.deletions, 0),
        checks,
        reviews: reviews.items.map((r) => ({ user: r.user?.login ?? null, state: r.state, submittedAt: r.submitted_at ?? null })),
      };
    },
    async describe(repo, n, block, o = {}) {
      const pr = await pull(client, repo, n, { urgent: true });
      if (!pr) return null;
      const next = rewriteCostBlock(pr.body, block);
      if (next === (pr.body ?? '')) return { changed: false };
      await client.request('PATCH', `/repos/${repo.split('/').map(encodeURIComponent).join('/')}/pulls/${n}`, { schema: pullShape, body: { body: next }, urgent: true, token: o.token });
      return { changed: true };
    },
    createIssue: (repo, body) => createIssue(client, repo, body),
    defaultBranch: (repo, o = {}) => defaultBranch(client, repo, o.token),
    async pullFromBranch(repo, branch, o = {}) {
      const pr = await pullFromBranch(client, repo, branch, o.token);
      return pr && { number: pr.number, url: pr.html_url };
    },
    async createPull(repo, body, o = {}) {
      const pr = await createPull(client, repo, body, o.token);
      return { number: pr.number, url: pr.html_url };
    },
    // The orchestrator's merge step (`svc-runner pr-merge`): squash, then the head branch is deleted,
    // as `gh pr merge --squash --delete-branch` did.
    async merge(repo, n, o = {}) {
      const pr = await pull(client, repo, n, { urgent: true });
      if (!pr) throw new CodeHostError('http', `pull request #${n} of ${repo} does not exist`, 404);
      let merged: { sha?: string | null; merged: boolean };
      try {
        merged = await mergePull(client, repo, n, o.token);
      } catch (e) {
        refusal(e);
      }
      const branchDeleted = merged.merged ? await deleteBranch(client, repo, pr.head.ref, o.token).catch(() => false) : false;
      return { merged: merged.merged, sha: merged.sha ?? null, branchDeleted };
    },
  };
}

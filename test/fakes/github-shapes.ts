// GitHub's answer objects for the fake GitHub (github.ts, github-app.ts), built on the examples of
// GitHub's own OpenAPI description (openapi-check.ts) with the fake's values laid over them, so every
// answer has every field GitHub's description requires (users, repositories, installations, issues,
// pull requests, files, reviews, check runs, commit statuses). An override of `undefined` removes a field.
import { githubExample } from './openapi-check.ts';

type Json = any; // eslint-disable-line @typescript-eslint/no-explicit-any

/** `over` laid over `base`: objects merged key by key, anything else replaced; undefined deletes. */
export function overlay(base: Json, over: Json): Json {
  if (!over || typeof over !== 'object' || Array.isArray(over) || !base || typeof base !== 'object' || Array.isArray(base)) return over;
  const out = { ...base };
  for (const [k, v] of Object.entries(over)) {
    if (v === undefined) delete out[k];
    else out[k] = overlay(base[k], v);
  }
  return out;
}

const WEB = 'https://github.example';
const API = 'https://api.github.example';

/** A user or organization (simple-user) with that login. */
export function userJson(login: string, type: 'User' | 'Organization' = 'User') {
  const u = `${API}/users/${login}`;
  return overlay(githubExample('installation').account, {
    login, type, html_url: `${WEB}/${login}`, url: u, repos_url: `${u}/repos`, events_url: `${u}/events{/privacy}`, received_events_url: `${u}/received_events`,
    followers_url: `${u}/followers`, following_url: `${u}/following{/other_user}`, gists_url: `${u}/gists{/gist_id}`, starred_url: `${u}/starred{/owner}{/repo}`,
    subscriptions_url: `${u}/subscriptions`, organizations_url: `${u}/orgs`,
  });
}

/** A repository (the `repository` schema) named owner/name. */
export function repositoryJson(fullName: string, id: number, extra: Json = {}) {
  const [owner, name] = fullName.split('/');
  return overlay(githubExample('installation-token').repositories[0], { id, name, full_name: fullName, private: true, owner: userJson(owner, 'Organization'), html_url: `${WEB}/${fullName}`, url: `${API}/repos/${fullName}`, ...extra });
}

/** GET /repos/:o/:r (full-repository). */
export function fullRepositoryJson(fullName: string, defaultBranch: string) {
  const [owner, name] = fullName.split('/');
  const base = githubExample('full-repository-default-response');
  return overlay(base, { name, full_name: fullName, default_branch: defaultBranch, owner: userJson(owner, 'Organization'), html_url: `${WEB}/${fullName}`, language: null, parent: undefined, source: undefined, organization: undefined, template_repository: undefined });
}

/** An installation (the App's, on an account). */
export function installationJson(over: Json) {
  return overlay(githubExample('installation'), over);
}

/** An installation token answer (201 of POST /app/installations/:id/access_tokens). */
export function installationTokenJson(over: Json) {
  return overlay(githubExample('installation-token'), over);
}

const labelJson = (fullName: string, name: string, i: number) => overlay(githubExample('issue').labels[0], { id: i + 1, name, url: `${API}/repos/${fullName}/labels/${encodeURIComponent(name)}`, default: false });

/** An issue; `pull: true` marks it as a pull request's issue (the `pull_request` key, as GitHub lists them). */
export function issueJson(fullName: string, i: { number: number; title: string; body: string; labels: string[]; state: 'open' | 'closed'; updatedAt: string; pull?: boolean }) {
  const url = `${API}/repos/${fullName}/issues/${i.number}`;
  const pr = githubExample('issue').pull_request;
  return overlay(githubExample('issue'), {
    number: i.number, title: i.title, body: i.body, state: i.state, id: i.number, url, html_url: `${WEB}/${fullName}/issues/${i.number}`,
    repository_url: `${API}/repos/${fullName}`, labels_url: `${url}/labels{/name}`, comments_url: `${url}/comments`, events_url: `${url}/events`,
    labels: i.labels.map((name, n) => labelJson(fullName, name, n)), user: userJson('octo'), assignee: null, assignees: [], milestone: null, closed_by: null,
    updated_at: i.updatedAt, closed_at: i.state === 'closed' ? i.updatedAt : null, state_reason: i.state === 'closed' ? 'completed' : null,
    pull_request: i.pull ? overlay(pr, { url: `${API}/repos/${fullName}/pulls/${i.number}`, html_url: `${WEB}/${fullName}/pull/${i.number}` }) : undefined,
  });
}

/** A comment on an issue (issue-comment). */
export function issueCommentJson(fullName: string, issue: number, c: { id: number; user: string; body: string; at: string }) {
  return overlay(githubExample('issue-comment'), {
    id: c.id, node_id: `IC_${c.id}`, body: c.body, user: userJson(c.user), created_at: c.at, updated_at: c.at,
    url: `${API}/repos/${fullName}/issues/comments/${c.id}`, html_url: `${WEB}/${fullName}/issues/${issue}#issuecomment-${c.id}`, issue_url: `${API}/repos/${fullName}/issues/${issue}`,
  });
}

export interface PullFields {
  number: number;
  title: string;
  body: string;
  state: 'open' | 'closed';
  merged: boolean;
  mergedAt: string | null;
  head: string;
  sha: string;
  base: string;
}

/** A pull request: `simple` for the list (pull-request-simple), else the whole one (pull-request). */
export function pullJson(fullName: string, repoId: number, p: PullFields, simple = false) {
  const base = simple ? githubExample('pull-request-simple-items')[0] : githubExample('pull-request');
  const [owner] = fullName.split('/');
  const repo = repositoryJson(fullName, repoId);
  const side = (ref: string, sha: string) => ({ label: `${owner}:${ref}`, ref, sha, user: userJson(owner, 'Organization'), repo });
  const over: Json = {
    number: p.number, title: p.title, body: p.body, state: p.state, id: p.number, draft: false, url: `${API}/repos/${fullName}/pulls/${p.number}`, html_url: `${WEB}/${fullName}/pull/${p.number}`,
    user: userJson('octo'), labels: [], milestone: null, assignee: null, assignees: [], requested_reviewers: [], requested_teams: [], auto_merge: null,
    merged_at: p.mergedAt, closed_at: p.state === 'closed' ? (p.mergedAt ?? '2026-11-23T12:00:00Z') : null, head: side(p.head, p.sha), base: side(p.base, base.base.sha),
  };
  if (!simple) Object.assign(over, { merged: p.merged, mergeable: p.state === 'open' ? true : null, rebaseable: p.state === 'open' ? true : null, mergeable_state: p.state === 'open' ? 'clean' : 'unknown', merged_by: p.merged ? userJson('octo') : null });
  return overlay(base, over);
}

/** A file of a pull request (diff-entry). */
export const fileJson = (f: { filename: string; status: string; additions: number; deletions: number }) => overlay(githubExample('diff-entry-items')[0], { ...f, changes: f.additions + f.deletions });

/** A review of a pull request. */
export const reviewJson = (fullName: string, pull: number, r: { id: number; user: { login: string }; state: string; submitted_at: string }) =>
  overlay(githubExample('pull-request-review-items')[0], { ...r, user: userJson(r.user.login), html_url: `${WEB}/${fullName}/pull/${pull}#pullrequestreview-${r.id}`, pull_request_url: `${API}/repos/${fullName}/pulls/${pull}` });

/** A check run of a commit. */
export const checkRunJson = (fullName: string, sha: string, id: number, c: { name: string; status: string; conclusion: string | null }) =>
  overlay(githubExample('check-run-paginated').check_runs[0], { id, head_sha: sha, name: c.name, status: c.status, conclusion: c.conclusion, html_url: `${WEB}/${fullName}/runs/${id}`, completed_at: c.status === 'completed' ? '2026-11-23T12:00:00Z' : null, pull_requests: [] });

/** The combined status of a commit. */
export function combinedStatusJson(fullName: string, sha: string, state: string, statuses: { context: string; state: string }[]) {
  const one = githubExample('combined-commit-status').statuses[0];
  return overlay(githubExample('combined-commit-status'), { state, sha, total_count: statuses.length, statuses: statuses.map((s, i) => overlay(one, { ...s, id: i + 1, target_url: null })), repository: overlay(githubExample('combined-commit-status').repository, { full_name: fullName, name: fullName.split('/')[1] }) });
}

// A small GitHub REST server on loopback for the code-host tests and the benchmark. It speaks the parts
// of the API the runner uses, with GitHub's shapes and headers:
//   GET  /user                                          the token's account (403 to an installation token)
//   GET  /repos/:o/:r                                   default_branch, full_name
//   GET  /repos/:o/:r/issues?state=open                 issues (and pull requests, with `pull_request`, as GitHub does)
//   POST /repos/:o/:r/issues                            201, {number, html_url, …}
//   GET  /repos/:o/:r/issues/:n, …/comments             one issue (404 when none), its comments
//   GET  /repos/:o/:r/pulls?state=open[&head=o:b]       open pull requests
//   GET  /repos/:o/:r/pulls/:n                          one, with merged/merged_at/mergeable
//   POST /repos/:o/:r/pulls                             201; 422 when the head branch is not on the remote
//   PATCH /repos/:o/:r/pulls/:n {body?, title?}         edit (the cost block, pr.describe)
//   GET  /repos/:o/:r/pulls/:n/files, …/reviews         lists
//   GET  /repos/:o/:r/commits/:sha/check-runs, …/status checks
//   PUT  /repos/:o/:r/pulls/:n/merge                    {sha, merged, message}; 405 with `mergeBlocked` as the message
//   DELETE /repos/:o/:r/git/refs/heads/:branch          204; 422 "Reference does not exist"
// Every list is paginated (per_page, page; `Link: <…>; rel="next"`, rel="last"); every 200 carries an
// ETag (a hash of the body) and a request with a matching If-None-Match gets 304, which does not count
// against the rate limit (as on GitHub). x-ratelimit-limit/remaining/reset/used on every answer; when
// the budget is spent: 403 with x-ratelimit-remaining 0 (or 429 with retry-after, `secondary`).
// Bearer token required (401 otherwise); a token listed in `readOnly` gets 403 "Resource not accessible
// by personal access token" on writes. `fail(n, mode)` answers the next n requests with 500, garbage
// (HTML with 200) or a connection drop. Every request is recorded in `requests`.
// The GitHub App endpoints (/app/installations, /repos/:o/:r/installation, access tokens) are in
// github-app.ts (`fake.app`); an installation token it minted is accepted here on its repositories only
// (404 on others, as GitHub answers), until it expires or its installation is revoked (401).
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { appFake, repoId } from './github-app.ts';
import type { AppFake } from './github-app.ts';
import { checkRunJson, combinedStatusJson, fileJson, fullRepositoryJson, issueCommentJson, issueJson as issueShape, overlay, pullJson as pullShape, reviewJson } from './github-shapes.ts';
import { githubExample, openapiRecorder } from './openapi-check.ts';
import type { OpenapiRecorder } from './openapi-check.ts';

export interface FakeCheckRun {
  name: string;
  status: 'queued' | 'in_progress' | 'completed';
  conclusion: string | null;
}
export interface FakePull {
  number: number;
  title: string;
  body: string;
  head: string;
  sha: string;
  base: string;
  state: 'open' | 'closed';
  merged: boolean;
  files: { filename: string; status: string; additions: number; deletions: number }[];
  reviews: { id: number; user: { login: string }; state: string; submitted_at: string }[];
  /** Branch protection's refusal (PUT …/merge answers 405 with it) while set. */
  mergeBlocked?: string;
}
export interface FakeRepo {
  name: string;
  defaultBranch: string;
  issues: { number: number; title: string; body: string; labels: string[]; state: 'open' | 'closed'; comments?: { id: number; user: string; body: string; at: string }[] }[];
  pulls: FakePull[];
  checkRuns: Record<string, FakeCheckRun[]>;
  statuses: Record<string, { context: string; state: string }[]>;
  next: number;
  /** Head branches deleted through DELETE …/git/refs/heads/…. */
  deletedBranches?: string[];
  /** A bare git repository the pull requests' head branches must exist in (POST /pulls checks it). */
  bare?: string;
}
export interface FakeRequest {
  method: string;
  path: string;
  status: number;
  conditional: boolean;
  token: string | null;
  body?: any;
  /** When it arrived (ms). */
  at: number;
}

export interface GitHubFake {
  url: string;
  token: string;
  /** The account `token` belongs to (GET /user). */
  login: string;
  readOnly: Set<string>;
  requests: FakeRequest[];
  rate: { limit: number; remaining: number; reset: number; secondary: number | null };
  repo: (name: string) => FakeRepo;
  addPull: (repo: string, p: Partial<FakePull> & { title: string; head: string }) => FakePull;
  fail: (n: number, mode: '500' | 'garbage' | 'drop') => void;
  /** GitHub App endpoints and installation tokens (github-app.ts). */
  app: AppFake;
  /** Every request and answer checked against GitHub's OpenAPI description (openapi-check.ts); tests assert no mismatch. */
  openapi: OpenapiRecorder;
  close: () => Promise<void>;
}

const etagOf = (text: string) => `W/"${createHash('sha256').update(text).digest('hex').slice(0, 32)}"`;

export async function githubFake(): Promise<GitHubFake> {
  const repos = new Map<string, FakeRepo>();
  const failing = { n: 0, mode: '500' as '500' | 'garbage' | 'drop' };
  const fake = {
    token: 'ghp_faketoken0123456789abcdefABCDEF0123',
    login: 'alice',
    readOnly: new Set<string>(),
    requests: [] as FakeRequest[],
    rate: { limit: 5000, remaining: 5000, reset: Math.floor(Date.now() / 1000) + 3600, secondary: null as number | null },
  } as GitHubFake;
  fake.repo = (name) => {
    let r = repos.get(name);
    if (!r) repos.set(name, (r = { name, defaultBranch: 'main', issues: [], pulls: [], checkRuns: {}, statuses: {}, next: 1 }));
    return r;
  };
  fake.addPull = (repo, p) => {
    const r = fake.repo(repo);
    const pull: FakePull = { number: r.next++, body: '', sha: createHash('sha1').update(`${repo}${r.next}${p.head}`).digest('hex'), base: r.defaultBranch, state: 'open', merged: false, files: [], reviews: [], ...p };
    r.pulls.push(pull);
    return pull;
  };
  fake.fail = (n, mode) => Object.assign(failing, { n, mode });
  fake.app = appFake(() => fake.url);
  fake.openapi = openapiRecorder();

  // GitHub's shapes (github-shapes.ts); `simple` is the list's pull-request-simple.
  const pullJson = (r: FakeRepo, p: FakePull, simple = false) =>
    pullShape(r.name, repoId(r.name), { ...p, mergedAt: p.merged ? '2026-11-23T12:00:00Z' : null }, simple);
  const issueJson = (r: FakeRepo, i: FakeRepo['issues'][number], pull = false) => issueShape(r.name, { ...i, updatedAt: '2026-11-23T12:00:00Z', pull });

  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', async () => {
      const url = new URL(req.url ?? '/', fake.url);
      const token = /^Bearer (.+)$/.exec(req.headers.authorization ?? '')?.[1] ?? null;
      const body = chunks.length ? JSON.parse(Buffer.concat(chunks).toString('utf8')) : undefined;
      const record: FakeRequest = { method: req.method ?? 'GET', path: url.pathname + url.search, status: 0, conditional: false, token, body, at: Date.now() };
      fake.requests.push(record);
      const send = (status: number, value: unknown, headers: Record<string, string> = {}) => {
        record.status = status;
        fake.openapi.record({ method: record.method, path: url.pathname, query: url.searchParams, requestBody: body, status, responseBody: value });
        res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', ...limits(), ...headers });
        res.end(value === undefined ? '' : JSON.stringify(value));
      };
      const limits = () => ({
        'x-ratelimit-limit': String(fake.rate.limit),
        'x-ratelimit-remaining': String(fake.rate.remaining),
        'x-ratelimit-reset': String(fake.rate.reset),
        'x-ratelimit-used': String(fake.rate.limit - fake.rate.remaining),
      });
      if (failing.n > 0) {
        failing.n--;
        record.status = -1;
        if (failing.mode === 'drop') return req.socket.destroy();
        if (failing.mode === 'garbage') return res.writeHead(200, { 'content-type': 'text/html' }).end('<html>Unicorn! This page is taking too long to load.</html>');
        return send(502, { message: 'Server Error' });
      }
      // A new rate-limit window at the reset time, as on GitHub.
      if (Date.now() / 1000 >= fake.rate.reset) Object.assign(fake.rate, { remaining: fake.rate.limit, reset: Math.floor(Date.now() / 1000) + 3600 });
      if (await fake.app.handle(record.method, url.pathname, req.headers.authorization, body, send)) return;
      const appToken = fake.app.tokenState(token);
      if (appToken?.valid === false || (!appToken && token !== fake.token && !fake.readOnly.has(token ?? ''))) return send(401, { message: 'Bad credentials' });
      if (fake.rate.secondary !== null) return send(429, { message: 'You have exceeded a secondary rate limit' }, { 'retry-after': String(fake.rate.secondary) });
      if (fake.rate.remaining <= 0) return send(403, { message: 'API rate limit exceeded' });
      // Answers a GET with an ETag; a matching If-None-Match is 304 and free.
      const ok = (value: unknown, status = 200, headers: Record<string, string> = {}) => {
        const text = JSON.stringify(value);
        const etag = etagOf(text + (headers.link ?? ''));
        if (req.method === 'GET' && req.headers['if-none-match'] === etag) {
          record.conditional = true;
          record.status = 304;
          res.writeHead(304, { etag, ...limits() });
          return res.end();
        }
        fake.rate.remaining--;
        send(status, value, { ...(req.method === 'GET' ? { etag } : {}), ...headers });
      };
      const page = (items: unknown[]) => {
        const per = Math.min(100, Number(url.searchParams.get('per_page') ?? 30) || 30);
        const n = Math.max(1, Number(url.searchParams.get('page') ?? 1) || 1);
        const last = Math.max(1, Math.ceil(items.length / per));
        const link = (p: number, rel: string) => {
          const u = new URL(url);
          u.searchParams.set('page', String(p));
          return `<${u}>; rel="${rel}"`;
        };
        const links = [...(n < last ? [link(n + 1, 'next'), link(last, 'last')] : []), ...(n > 1 ? [link(1, 'first'), link(n - 1, 'prev')] : [])];
        ok(items.slice((n - 1) * per, n * per), 200, links.length ? { link: links.join(', ') } : {});
      };
      // The token's own account (the runner asks once per token, for the Projects page's "as @login").
      // An installation token is not a user: GitHub answers 403 to it.
      if (url.pathname === '/user' && req.method === 'GET') {
        if (appToken) return send(403, { message: 'Resource not accessible by integration', documentation_url: 'https://docs.github.com/rest/users/users#get-the-authenticated-user', status: '403' });
        return send(200, overlay(githubExample('private-user-response-with-public-profile-information'), { login: fake.login }));
      }
      const m = /^\/repos\/([^/]+)\/([^/]+)(\/.*)?$/.exec(url.pathname);
      if (!m) return send(404, { message: 'Not Found' });
      const r = repos.get(`${m[1]}/${m[2]}`) ?? [...repos.values()].find((x) => x.name.toLowerCase() === `${m[1]}/${m[2]}`.toLowerCase()); // names are case-insensitive, as on GitHub
      if (!r) return send(404, { message: 'Not Found' });
      if (appToken?.valid && !appToken.repos.some((x) => x.toLowerCase() === r.name.toLowerCase())) return send(404, { message: 'Not Found' });
      const rest = m[3] ?? '';
      const write = req.method === 'POST' || req.method === 'PATCH' || req.method === 'PUT' || req.method === 'DELETE';
      if (write && fake.readOnly.has(token ?? '')) return send(403, { message: 'Resource not accessible by personal access token', documentation_url: 'https://docs.github.com/rest' });
      let g: RegExpExecArray | null;
      if (rest === '' && req.method === 'GET') return ok(fullRepositoryJson(r.name, r.defaultBranch));
      if (rest === '/issues' && req.method === 'GET') {
        const open = [...r.issues.filter((i) => i.state === 'open').map((i) => issueJson(r, i)), ...r.pulls.filter((p) => p.state === 'open').map((p) => issueJson(r, { number: p.number, title: p.title, body: p.body, labels: [], state: 'open' }, true))];
        return page(open.sort((a, b) => b.number - a.number));
      }
      if (rest === '/issues' && req.method === 'POST') {
        if (typeof body?.title !== 'string' || !body.title) return send(422, { message: 'Validation Failed', errors: [{ field: 'title', code: 'missing_field' }] });
        const issue = { number: r.next++, title: body.title, body: body.body ?? '', labels: body.labels ?? [], state: 'open' as const };
        r.issues.push(issue);
        return ok(issueJson(r, issue), 201);
      }
      if ((g = /^\/issues\/(\d+)(\/comments)?$/.exec(rest)) && req.method === 'GET') {
        const issue = r.issues.find((i) => i.number === Number(g![1]));
        if (!issue) return send(404, { message: 'Not Found', documentation_url: 'https://docs.github.com/rest/issues/issues#get-an-issue', status: '404' });
        if (!g[2]) return ok(issueJson(r, issue));
        return page((issue.comments ?? []).map((c) => issueCommentJson(r.name, issue.number, c)));
      }
      if (rest === '/pulls' && req.method === 'GET') {
        const head = url.searchParams.get('head');
        const open = r.pulls.filter((p) => p.state === 'open' && (!head || `${r.name.split('/')[0]}:${p.head}` === head));
        return page(open.sort((a, b) => b.number - a.number).map((p) => pullJson(r, p, true)));
      }
      if (rest === '/pulls' && req.method === 'POST') {
        if (!body?.title || !body?.head || !body?.base) return send(422, { message: 'Validation Failed' });
        if (r.bare) {
          try {
            const sha = execFileSync('git', ['rev-parse', '--verify', '-q', `refs/heads/${body.head}`], { cwd: r.bare, encoding: 'utf8' }).trim();
            const p = fake.addPull(r.name, { title: body.title, body: body.body ?? '', head: body.head, base: body.base, sha });
            return ok(pullJson(r, p), 201);
          } catch {
            return send(422, { message: 'Validation Failed', errors: [{ resource: 'PullRequest', field: 'head', code: 'invalid' }] });
          }
        }
        return ok(pullJson(r, fake.addPull(r.name, { title: body.title, body: body.body ?? '', head: body.head, base: body.base })), 201);
      }
      if ((g = /^\/pulls\/(\d+)(\/files|\/reviews)?$/.exec(rest)) && req.method === 'GET') {
        const p = r.pulls.find((x) => x.number === Number(g![1]));
        if (!p) return send(404, { message: 'Not Found' });
        if (g[2] === '/files') return page(p.files.map(fileJson));
        if (g[2] === '/reviews') return page(p.reviews.map((x) => reviewJson(r.name, p.number, x)));
        return ok(pullJson(r, p));
      }
      if ((g = /^\/pulls\/(\d+)\/merge$/.exec(rest)) && req.method === 'PUT') {
        const p = r.pulls.find((x) => x.number === Number(g![1]));
        if (!p) return send(404, { message: 'Not Found', documentation_url: 'https://docs.github.com/rest/pulls/pulls#merge-a-pull-request', status: '404' });
        if (p.state !== 'open' || p.mergeBlocked) return send(405, { message: p.mergeBlocked ?? 'Pull Request is not mergeable', documentation_url: 'https://docs.github.com/rest/pulls/pulls#merge-a-pull-request', status: '405' });
        Object.assign(p, { state: 'closed', merged: true });
        return send(200, { sha: 'f'.repeat(40), merged: true, message: 'Pull Request successfully merged' });
      }
      if ((g = /^\/git\/refs\/heads\/(.+)$/.exec(rest)) && req.method === 'DELETE') {
        const branch = decodeURIComponent(g[1]);
        if (!r.pulls.some((p) => p.head === branch) || r.deletedBranches?.includes(branch)) return send(422, { message: 'Reference does not exist', documentation_url: 'https://docs.github.com/rest/git/refs#delete-a-reference', status: '422' });
        (r.deletedBranches ??= []).push(branch);
        record.status = 204;
        res.writeHead(204, limits());
        return res.end();
      }
      if ((g = /^\/pulls\/(\d+)$/.exec(rest)) && req.method === 'PATCH') {
        const p = r.pulls.find((x) => x.number === Number(g![1]));
        if (!p) return send(404, { message: 'Not Found' });
        if (body?.body !== undefined && body.body !== null && typeof body.body !== 'string') return send(422, { message: 'Validation Failed', errors: [{ resource: 'PullRequest', field: 'body', code: 'invalid' }] });
        if (body?.body !== undefined) p.body = body.body ?? '';
        if (typeof body?.title === 'string') p.title = body.title;
        return ok(pullJson(r, p));
      }
      if ((g = /^\/commits\/([0-9a-f]{7,40})\/(check-runs|status)$/.exec(rest)) && req.method === 'GET') {
        if (g[2] === 'check-runs') {
          const runs = (r.checkRuns[g[1]] ?? []).map((c, i) => checkRunJson(r.name, g![1], i + 1, c));
          return ok({ total_count: runs.length, check_runs: runs });
        }
        const statuses = r.statuses[g[1]] ?? [];
        const state = statuses.some((s) => s.state === 'failure' || s.state === 'error') ? 'failure' : statuses.some((s) => s.state === 'pending') || statuses.length === 0 ? 'pending' : 'success';
        return ok(combinedStatusJson(r.name, g[1], state, statuses));
      }
      send(404, { message: 'Not Found' });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  fake.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  fake.close = () => new Promise<void>((resolve) => (server.closeAllConnections(), server.close(() => resolve())));
  return fake;
}

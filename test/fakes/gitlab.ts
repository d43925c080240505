// A small GitLab REST v4 server on loopback for the GitLab code-host tests (issue 42; docs/testing.md).
// Its answers are built by gitlab-shapes.ts, typed against @gitbeaker/core's schemas (tsc checks every
// field it sends); the requests svc makes are checked here (paths, query, JSON bodies) and an unknown
// one is answered 404 and recorded with `unexpected`. Served under an optional path prefix
// (self-managed `https://host/gitlab`): `<prefix>/api/v4/...`.
//   GET  /projects/:id                        :id is the numeric id or the URL-encoded full path
//   GET  /projects/:id/issues?state=opened    POST /projects/:id/issues {title, description, labels}
//   GET  /projects/:id/issues/:iid            …/notes?sort=asc&order_by=created_at (with system notes)
//   GET  /projects/:id/merge_requests?state=opened[&source_branch=]   POST (201)
//   GET  /projects/:id/merge_requests/:iid    …/diffs, …/approvals, POST …/approve, PUT …/merge
//   PUT  /projects/:id/merge_requests/:iid {description} (the cost block, pr.describe)
//   GET  /projects/:id/pipelines?sha=&order_by=id&sort=desc           GET /projects/:id/pipelines/:pid/jobs
// Pagination (page, per_page): `x-next-page`, `x-page`, `x-per-page`, `x-total` and, unless
// `paging = 'headers'`, a `Link` header (GitLab sends both; keyset lists send Link only).
// Tokens: `Authorization: Bearer` or `PRIVATE-TOKEN`; unknown → 401 {"message":"401 Unauthorized"};
// a token in `readOnly` (scope read_api) → 403 {"error":"insufficient_scope",…} on writes, as GitLab.
// `limit(n, seconds)`: the next n requests get 429 with Retry-After (GitLab's rate limiter).
import http from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { approvalsJson, issueJson, jobJson, mrJson, noteJson, pipelineJson, projectJson } from './gitlab-shapes.ts';
import type { FakeGlIssue, FakeGlJob, FakeGlMr, FakeGlPipeline, FakeGlProject } from './gitlab-shapes.ts';

export type { FakeGlIssue, FakeGlJob, FakeGlMr, FakeGlPipeline, FakeGlProject } from './gitlab-shapes.ts';

export interface GlRequest {
  method: string;
  path: string;
  status: number;
  token: string | null;
  body?: any;
}

export interface GitLabFake {
  /** The instance's base URL (what a project's `baseUrl` is), with the prefix. */
  url: string;
  token: string;
  readOnly: Set<string>;
  requests: GlRequest[];
  unexpected: string[];
  paging: 'both' | 'headers';
  project: (path: string) => FakeGlProject;
  addIssue: (path: string, i: { title: string; labels?: string[] }) => FakeGlIssue;
  addMr: (path: string, m: { title: string; source: string; sha: string }) => FakeGlMr;
  /** A new pipeline for a commit with these jobs (status per job name). */
  pipeline: (path: string, sha: string, jobs: Record<string, string>) => FakeGlPipeline;
  /** Retry a job of a pipeline: the old attempt stays (retried), a new one runs with `status`. */
  retry: (p: FakeGlPipeline, name: string, status: string) => void;
  /** Merge from GitLab's UI (a person). */
  mergeInUi: (path: string, iid: number) => void;
  limit: (n: number, retryAfterSeconds: number) => void;
  close: () => Promise<void>;
}

const now = () => new Date().toISOString();

/** `tls`: serve HTTPS with this key and certificate (a self-managed instance with its own CA). */
export async function gitlabFake(o: { prefix?: string; tls?: { key: string; cert: string } } = {}): Promise<GitLabFake> {
  const prefix = o.prefix ?? '';
  const projects = new Map<string, FakeGlProject>();
  let ids = 100;
  let limited = { n: 0, seconds: 0 };
  const token = 'glpat-fake-' + Math.random().toString(36).slice(2, 14);
  let origin = '';

  const fake: GitLabFake = {
    url: '',
    token,
    readOnly: new Set(),
    requests: [],
    unexpected: [],
    paging: 'both',
    project(path) {
      let p = projects.get(path.toLowerCase());
      if (!p) {
        p = { id: ++ids, path, defaultBranch: 'main', issues: [], mrs: [], pipelines: [], next: { issue: 1, mr: 1 } };
        projects.set(path.toLowerCase(), p);
      }
      return p;
    },
    addIssue(path, i) {
      const p = fake.project(path);
      const issue = { id: ++ids, iid: p.next.issue++, title: i.title, description: '', labels: i.labels ?? [], state: 'opened' as const, at: now() };
      p.issues.push(issue);
      return issue;
    },
    addMr(path, m) {
      const p = fake.project(path);
      const mr: FakeGlMr = { id: ++ids, iid: p.next.mr++, title: m.title, description: '', source: m.source, target: p.defaultBranch, sha: m.sha, state: 'opened', approvedBy: [], mergeCommit: null, at: now() };
      p.mrs.push(mr);
      return mr;
    },
    pipeline(path, sha, jobs) {
      const p = fake.project(path);
      const pl: FakeGlPipeline = { id: ++ids, iid: p.pipelines.length + 1, projectId: p.id, sha, ref: 'x', jobs: Object.entries(jobs).map(([name, status]) => ({ id: ++ids, name, status, retried: false })), at: now() };
      p.pipelines.push(pl);
      return pl;
    },
    retry(pl, name, status) {
      const old = pl.jobs.find((j) => j.name === name && !j.retried)!;
      old.retried = true;
      pl.jobs.push({ id: ++ids, name, status, retried: false });
    },
    mergeInUi(path, iid) {
      const mr = fake.project(path).mrs.find((m) => m.iid === iid)!;
      mr.state = 'merged';
      mr.mergeCommit = 'f'.repeat(40);
    },
    limit(n, seconds) {
      limited = { n, seconds };
    },
    close: () => new Promise((r) => server.close(() => r())),
  };

  const send = (res: http.ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) => {
    res.writeHead(status, { 'content-type': 'application/json', ...headers });
    res.end(JSON.stringify(body));
  };
  const page = <T>(res: http.ServerResponse, url: URL, items: T[], map: (t: T) => unknown) => {
    const per = Math.min(Number(url.searchParams.get('per_page') ?? 20), 100);
    const n = Math.max(1, Number(url.searchParams.get('page') ?? 1));
    const next = n * per < items.length ? n + 1 : null;
    const headers: Record<string, string> = { 'x-page': String(n), 'x-per-page': String(per), 'x-total': String(items.length), 'x-next-page': next ? String(next) : '' };
    if (next && fake.paging === 'both') {
      const u = new URL(url.toString());
      u.searchParams.set('page', String(next));
      headers.link = `<${origin}${u.pathname}${u.search}>; rel="next"`;
    }
    send(res, 200, items.slice((n - 1) * per, n * per).map(map), headers);
  };

  const handler = (req: http.IncomingMessage, res: http.ServerResponse) => {
    let raw = '';
    req.on('data', (c) => (raw += c));
    req.on('end', () => {
      const url = new URL(req.url ?? '/', 'http://x');
      const auth = req.headers.authorization?.replace(/^Bearer /, '') ?? (req.headers['private-token'] as string | undefined) ?? null;
      let body: any;
      try {
        body = raw ? JSON.parse(raw) : undefined;
      } catch {
        body = '<not json>';
      }
      const rec: GlRequest = { method: req.method ?? '', path: url.pathname.slice(prefix.length) + url.search, status: 0, token: auth, body };
      fake.requests.push(rec);
      const answer = (status: number, b: unknown, h?: Record<string, string>) => ((rec.status = status), send(res, status, b, h));
      const wrapped = res.writeHead.bind(res);
      res.writeHead = ((status: number, ...rest: any[]) => ((rec.status = status), wrapped(status, ...rest))) as typeof res.writeHead;
      if (limited.n > 0) {
        limited.n--;
        return answer(429, { message: 'Retry later' }, { 'retry-after': String(limited.seconds), 'ratelimit-remaining': '0' });
      }
      if (!url.pathname.startsWith(`${prefix}/api/v4/`)) return answer(404, { message: '404 Not Found' });
      if (auth !== token && !fake.readOnly.has(auth ?? '')) return answer(401, { message: '401 Unauthorized' });
      const write = req.method !== 'GET';
      if (write && fake.readOnly.has(auth ?? '')) return answer(403, { error: 'insufficient_scope', error_description: 'The request requires higher privileges than provided by the access token.', scope: 'api' });
      if (req.method === 'GET' && url.pathname === `${prefix}/api/v4/personal_access_tokens/self`) {
        const scopes = auth === token ? ['api', 'write_repository'] : ['read_api'];
        return answer(200, { id: 1, name: 'svc', revoked: false, created_at: '2026-01-01T00:00:00Z', scopes, user_id: 9, last_used_at: null, active: true, expires_at: null });
      }
      // The project segment is one URL-encoded path (`group%2Fsub%2Fapp`), never raw slashes.
      const m = /^\/projects\/([^/]+)(\/.*)?$/.exec(url.pathname.slice(prefix.length + '/api/v4'.length));
      if (!m) return unexpected();
      const key = decodeURIComponent(m[1]);
      const p = /^\d+$/.test(key) ? [...projects.values()].find((x) => x.id === Number(key)) : projects.get(key.toLowerCase());
      if (!p) return answer(404, { message: '404 Project Not Found' });
      const rest = m[2] ?? '';
      const q = url.searchParams;
      const route = `${req.method} ${rest.replace(/\/\d+/g, '/:n')}`;
      const nums = [...rest.matchAll(/\/(\d+)/g)].map((x) => Number(x[1]));
      const mr = () => p.mrs.find((x) => x.iid === nums[0]);
      switch (route) {
        case 'GET ':
          return answer(200, projectJson(p, origin + prefix));
        case 'GET /issues':
          return page(res, url, p.issues.filter((i) => (q.get('state') ?? 'all') === 'all' || i.state === q.get('state')), (i) => issueJson(p, i, origin + prefix));
        case 'POST /issues': {
          if (typeof body?.title !== 'string' || (body.labels !== undefined && typeof body.labels !== 'string')) return answer(400, { message: { title: ['is missing'] } });
          const i = fake.addIssue(p.path, { title: body.title, labels: body.labels ? String(body.labels).split(',') : [] });
          i.description = String(body.description ?? '');
          return answer(201, issueJson(p, i, origin + prefix));
        }
        case 'GET /issues/:n': {
          const i = p.issues.find((x) => x.iid === nums[0]);
          return i ? answer(200, issueJson(p, i, origin + prefix)) : answer(404, { message: '404 Not found' });
        }
        case 'GET /issues/:n/notes': {
          const i = p.issues.find((x) => x.iid === nums[0]);
          if (!i) return answer(404, { message: '404 Not found' });
          if (!['asc', 'desc', null].includes(q.get('sort')) || !['created_at', 'updated_at', null].includes(q.get('order_by'))) return answer(400, { error: 'sort, order_by does not have a valid value' });
          const notes = [...(i.notes ?? [])].sort((a, b) => (q.get('sort') === 'asc' ? a.id - b.id : b.id - a.id));
          return page(res, url, notes, (n) => noteJson(p, i, n));
        }
        case 'GET /merge_requests': {
          const list = p.mrs.filter((x) => (q.get('state') ?? 'all') === 'all' || x.state === q.get('state')).filter((x) => !q.get('source_branch') || x.source === q.get('source_branch'));
          return page(res, url, list, (x) => mrJson(p, x, origin + prefix));
        }
        case 'POST /merge_requests': {
          if (typeof body?.source_branch !== 'string' || typeof body?.target_branch !== 'string' || typeof body?.title !== 'string') return answer(400, { message: 'source_branch, target_branch, title are missing' });
          if (p.mrs.some((x) => x.state === 'opened' && x.source === body.source_branch)) return answer(409, { message: ['Another open merge request already exists for this source branch'] });
          const x = fake.addMr(p.path, { title: body.title, source: body.source_branch, sha: 'a'.repeat(40) });
          x.description = String(body.description ?? '');
          return answer(201, mrJson(p, x, origin + prefix));
        }
        case 'GET /merge_requests/:n':
          return mr() ? answer(200, mrJson(p, mr()!, origin + prefix)) : answer(404, { message: '404 Not found' });
        case 'PUT /merge_requests/:n': {
          const x = mr();
          if (!x) return answer(404, { message: '404 Not found' });
          if (body?.description !== undefined && typeof body.description !== 'string') return answer(400, { message: { description: ['is invalid'] } });
          if (typeof body?.description === 'string') x.description = body.description;
          return answer(200, mrJson(p, x, origin + prefix));
        }
        case 'GET /merge_requests/:n/diffs':
          return mr() ? page(res, url, mr()!.diffs ?? [], (d) => d) : answer(404, { message: '404 Not found' });
        case 'GET /merge_requests/:n/approvals':
          return mr() ? answer(200, approvalsJson(p, mr()!)) : answer(404, { message: '404 Not found' });
        case 'POST /merge_requests/:n/approve': {
          const x = mr();
          if (!x) return answer(404, { message: '404 Not found' });
          if (x.approvedBy.includes('svc-bot')) return answer(401, { message: '401 Unauthorized' });
          x.approvedBy.push('svc-bot');
          return answer(201, approvalsJson(p, x));
        }
        case 'PUT /merge_requests/:n/merge': {
          const x = mr();
          if (!x) return answer(404, { message: '404 Not found' });
          if (x.state !== 'opened') return answer(405, { message: '405 Method Not Allowed' });
          if (x.requiredApprovals && x.approvedBy.length < x.requiredApprovals) return answer(405, { message: '405 Method Not Allowed' });
          x.state = 'merged';
          x.mergeCommit = 'e'.repeat(40);
          return answer(200, mrJson(p, x, origin + prefix));
        }
        case 'GET /pipelines': {
          const list = p.pipelines.filter((x) => !q.get('sha') || x.sha === q.get('sha')).sort((a, b) => b.id - a.id);
          return page(res, url, list, (x) => pipelineJson(x, origin + prefix, p.path));
        }
        case 'GET /pipelines/:n/jobs': {
          const pl = p.pipelines.find((x) => x.id === nums[0]);
          if (!pl) return answer(404, { message: '404 Not found' });
          const jobs = pl.jobs.filter((j) => q.get('include_retried') === 'true' || !j.retried);
          return page(res, url, jobs, (j: FakeGlJob) => jobJson(pl, j, origin + prefix, p.path));
        }
      }
      return unexpected();
      function unexpected() {
        fake.unexpected.push(`${req.method} ${rec.path}`);
        answer(404, { message: '404 Not Found' });
      }
    });
  };
  const server = o.tls ? https.createServer(o.tls, handler) : http.createServer(handler);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  origin = `${o.tls ? 'https' : 'http'}://127.0.0.1:${(server.address() as AddressInfo).port}`;
  fake.url = origin + prefix;
  return fake;
}

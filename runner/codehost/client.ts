// The code host's REST client (docs/runner.md, "Code host"): GitHub's REST API at a configurable base
// URL (api.github.com, GitHub Enterprise's https://<host>/api/v3, the tests' fake).
//
// Steps of one request, in order:
//   1. Refuse without touching the network while the rate limit is spent (until its reset) or, for
//      background polls, while a failure backoff runs: the runner never hammers the code host.
//   2. Send it with the token (Bearer) and, for a GET seen before, `If-None-Match: <etag>`; a 304 gives
//      the cached body back and costs no rate limit.
//   3. Read the rate-limit headers of every answer. 403/429 with `x-ratelimit-remaining: 0` or a
//      `retry-after` blocks every request until the reset; a success with 0 remaining blocks too.
//   4. 5xx, a network error, a timeout or a body that is not the expected JSON shape starts (or doubles)
//      the backoff: 2 s, 4 s, … up to 15 min; any good answer ends it.
// The state (ok, rate_limited, backoff, no_token) is published through `onStatus` for `svc-runner
// status` and runner.describe. Tokens never appear in errors or the status.
import * as z from 'zod';
import { VERSION } from '../../protocol/version.ts';

export type CodeHostErrorCode = 'rate_limited' | 'backoff' | 'no_token' | 'unreachable' | 'garbage' | 'http';

export class CodeHostError extends Error {
  constructor(
    readonly code: CodeHostErrorCode,
    message: string,
    readonly status?: number,
  ) {
    super(message);
  }
}

export interface CodeHostStatus {
  state: 'idle' | 'ok' | 'rate_limited' | 'backoff' | 'no_token';
  /** Until when requests wait (rate limit reset or end of the backoff), ISO time. */
  until: string | null;
  remaining: number | null;
  limit: number | null;
  lastError: string | null;
  /** Requests sent since the daemon started, and how many of them were answered 304. */
  requests: number;
  notModified: number;
}

export interface ClientOptions {
  apiUrl: string;
  /** GitHub's REST API (default) or GitLab's REST v4 (`<base>/api/v4`): headers, pagination, errors differ. */
  kind?: 'github' | 'gitlab';
  /** The token for a repository (owner/name, from the request's /repos/ path; undefined for others), or
   *  null when none is configured anywhere (resolved per request; cache it outside). */
  token: (repo?: string) => Promise<string | null>;
  fetch?: typeof fetch;
  now?: () => number;
  timeoutMs?: number;
  backoffBaseMs?: number;
  backoffMaxMs?: number;
  onStatus?: (s: CodeHostStatus) => void;
  /** GitHub answered 401 to this token for this repository: true when it was the server's App token, now
   *  dropped (a removed installation), and the request goes once more with the runner's own token. */
  onUnauthorized?: (repo: string | undefined, token: string) => boolean;
}

export interface Answer<T> {
  status: number;
  data: T;
  headers: Headers;
  notModified: boolean;
}

interface RequestOptions<S extends z.ZodType> {
  schema: S;
  body?: unknown;
  /** A person asked for it (a command): goes out during a failure backoff, never past a rate limit. */
  urgent?: boolean;
  /** Extra accepted statuses besides 2xx (e.g. 404 for "no such pull request"). */
  accept?: number[];
  /** This token instead of the default one (a skill run's profile). */
  token?: string;
}

const MAX_CACHED = 5000;

export class GitHubClient {
  private readonly base: string;
  private readonly fetchFn: typeof fetch;
  private readonly now: () => number;
  private readonly etags = new Map<string, { etag: string; data: unknown }>();
  private blockedUntil = 0;
  private backoffUntil = 0;
  private failures = 0;
  readonly status: CodeHostStatus = { state: 'idle', until: null, remaining: null, limit: null, lastError: null, requests: 0, notModified: 0 };

  constructor(private readonly opts: ClientOptions) {
    this.base = opts.apiUrl.replace(/\/+$/, '');
    this.fetchFn = opts.fetch ?? fetch;
    this.now = opts.now ?? Date.now;
  }

  /** Why background polls must wait now (null: they may go). */
  waiting(): { code: 'rate_limited' | 'backoff'; until: number } | null {
    const t = this.now();
    if (t < this.blockedUntil) return { code: 'rate_limited', until: this.blockedUntil };
    if (t < this.backoffUntil) return { code: 'backoff', until: this.backoffUntil };
    return null;
  }

  async request<S extends z.ZodType>(method: 'GET' | 'POST' | 'PATCH' | 'PUT' | 'DELETE', path: string, o: RequestOptions<S>): Promise<Answer<z.output<S>>> {
    const url = path.startsWith('http') ? path : `${this.base}${path}`;
    // A Link URL elsewhere would carry the token off: only the configured API is ever asked.
    if (!url.startsWith(`${this.base}/`)) throw new CodeHostError('garbage', `${method}: the code host pointed outside ${this.base}`);
    const t = this.now();
    if (t < this.blockedUntil) throw new CodeHostError('rate_limited', `the code host's rate limit is spent; requests wait until ${iso(this.blockedUntil)}`);
    if (!o.urgent && t < this.backoffUntil) throw new CodeHostError('backoff', `the code host failed; the next poll waits until ${iso(this.backoffUntil)}`);
    const repo = this.opts.kind === 'gitlab' ? projectOf(url.slice(this.base.length)) : repoOf(url.slice(this.base.length));
    const token = o.token ?? (await this.opts.token(repo));
    if (!token) {
      const gitlab = this.opts.kind === 'gitlab';
      this.publish({ state: 'no_token', until: null, lastError: gitlab ? 'no GitLab token (the server\'s for the project, profile or environment GITLAB_TOKEN, or `glab auth login`)' : 'no code-host token (profile GH_TOKEN/GITHUB_TOKEN, the environment, or `gh auth token`)' });
      throw new CodeHostError('no_token', gitlab ? 'no GitLab token: store one for the project on the server, set GITLAB_TOKEN in a profile or the environment, or sign in with `glab auth login`' : 'no code-host token: set GH_TOKEN or GITHUB_TOKEN in a profile or the environment, or sign in with `gh auth login`');
    }
    const headers: Record<string, string> =
      this.opts.kind === 'gitlab'
        ? { accept: 'application/json', authorization: `Bearer ${token}`, 'user-agent': `svc-runner/${VERSION}` }
        : { accept: 'application/vnd.github+json', authorization: `Bearer ${token}`, 'user-agent': `svc-runner/${VERSION}`, 'x-github-api-version': '2022-11-28' };
    const cached = method === 'GET' ? this.etags.get(url) : undefined;
    if (cached) headers['if-none-match'] = cached.etag;
    if (o.body !== undefined) headers['content-type'] = 'application/json';
    let res: Response;
    let text: string;
    this.status.requests++;
    try {
      res = await this.fetchFn(url, { method, headers, body: o.body === undefined ? undefined : JSON.stringify(o.body), signal: AbortSignal.timeout(this.opts.timeoutMs ?? 20_000) });
      text = await res.text();
    } catch (e) {
      const cause = (e as { cause?: { code?: string } }).cause?.code ?? (e as Error).name;
      throw this.fail(new CodeHostError('unreachable', `${method} ${path}: the code host did not answer (${cause})`));
    }
    this.readLimits(res.headers);
    if (res.status === 401 && !o.token && this.opts.onUnauthorized?.(repo, token)) return this.request(method, path, o);
    if (res.status === 304 && cached) {
      this.status.notModified++;
      this.succeed();
      return { status: 304, data: cached.data as z.output<S>, headers: res.headers, notModified: true };
    }
    if ((res.status === 403 || res.status === 429) && (res.headers.get('x-ratelimit-remaining') === '0' || res.headers.has('retry-after'))) {
      const retry = Number(res.headers.get('retry-after'));
      const reset = Number(res.headers.get('x-ratelimit-reset'));
      const until = Number.isFinite(retry) && retry > 0 ? this.now() + retry * 1000 : Number.isFinite(reset) && reset > 0 ? reset * 1000 : this.now() + 60_000;
      this.blockedUntil = Math.max(this.blockedUntil, until);
      this.publish({ state: 'rate_limited', until: iso(this.blockedUntil), lastError: `HTTP ${res.status}: rate limit` });
      throw new CodeHostError('rate_limited', `the code host's rate limit is spent; requests wait until ${iso(this.blockedUntil)}`, res.status);
    }
    if (res.status >= 500) throw this.fail(new CodeHostError('http', `${method} ${path}: HTTP ${res.status} from the code host`, res.status));
    let json: unknown;
    try {
      json = text === '' ? null : JSON.parse(text);
    } catch {
      throw this.fail(new CodeHostError('garbage', `${method} ${path}: the code host answered HTTP ${res.status} with a body that is not JSON`, res.status));
    }
    if (res.status >= 400 && !o.accept?.includes(res.status)) {
      this.succeed(); // the host works; the request was refused
      const message = errorMessage(json);
      throw new CodeHostError('http', `${method} ${path}: HTTP ${res.status}${message ? `: ${message}` : ''}`, res.status);
    }
    if (res.status >= 400) {
      this.succeed();
      return { status: res.status, data: null as z.output<S>, headers: res.headers, notModified: false };
    }
    const parsed = o.schema.safeParse(json);
    if (!parsed.success) throw this.fail(new CodeHostError('garbage', `${method} ${path}: the answer does not have the expected shape (${parsed.error.issues[0]?.path.join('.') || 'body'})`, res.status));
    const etag = res.headers.get('etag');
    if (method === 'GET' && etag) this.remember(url, etag, parsed.data);
    this.succeed();
    return { status: res.status, data: parsed.data, headers: res.headers, notModified: false };
  }

  /** Every page of a list (Link: rel="next"), up to `maxPages`; `notModified` when every page was 304. */
  async paginate<S extends z.ZodType>(path: string, item: S, maxPages = 100, urgent = false): Promise<{ items: z.output<S>[]; notModified: boolean; complete: boolean }> {
    const items: z.output<S>[] = [];
    let next: string | null = path;
    let notModified = true;
    let pages = 0;
    while (next && pages < maxPages) {
      const a: Answer<z.output<S>[]> = await this.request('GET', next, { schema: z.array(item), urgent });
      items.push(...a.data);
      notModified &&= a.notModified;
      next = nextLink(a.headers.get('link')) ?? nextPage(next, a.headers.get('x-next-page'));
      pages++;
    }
    return { items, notModified, complete: next === null };
  }

  private remember(url: string, etag: string, data: unknown): void {
    this.etags.delete(url);
    this.etags.set(url, { etag, data });
    if (this.etags.size > MAX_CACHED) this.etags.delete(this.etags.keys().next().value!);
  }

  private readLimits(h: Headers): void {
    // GitHub: x-ratelimit-*; GitLab: ratelimit-* (reset in epoch seconds as well).
    const remaining = Number(h.get('x-ratelimit-remaining') ?? h.get('ratelimit-remaining') ?? NaN);
    const limit = Number(h.get('x-ratelimit-limit') ?? h.get('ratelimit-limit') ?? NaN);
    if (Number.isFinite(remaining)) this.status.remaining = remaining;
    if (Number.isFinite(limit)) this.status.limit = limit;
    const reset = Number(h.get('x-ratelimit-reset') ?? h.get('ratelimit-reset') ?? NaN);
    // Spent on a success: the next request would be refused, so none is sent before the reset.
    if (remaining === 0 && Number.isFinite(reset) && reset * 1000 > this.now()) this.blockedUntil = Math.max(this.blockedUntil, reset * 1000);
  }

  private succeed(): void {
    this.failures = 0;
    this.backoffUntil = 0;
    if (this.now() < this.blockedUntil) this.publish({ state: 'rate_limited', until: iso(this.blockedUntil), lastError: this.status.lastError });
    else this.publish({ state: 'ok', until: null, lastError: this.status.state === 'ok' ? this.status.lastError : null });
  }

  private fail(e: CodeHostError): CodeHostError {
    this.failures++;
    const base = this.opts.backoffBaseMs ?? 2000;
    const delay = Math.min(base * 2 ** Math.min(this.failures - 1, 20), this.opts.backoffMaxMs ?? 15 * 60_000);
    this.backoffUntil = this.now() + delay;
    this.publish({ state: 'backoff', until: iso(this.backoffUntil), lastError: e.message.slice(0, 300) });
    return e;
  }

  private publish(s: Pick<CodeHostStatus, 'state' | 'until' | 'lastError'>): void {
    const changed = s.state !== this.status.state || s.until !== this.status.until || s.lastError !== this.status.lastError;
    Object.assign(this.status, s);
    if (changed) this.opts.onStatus?.({ ...this.status });
  }
}

const iso = (ms: number) => new Date(ms).toISOString();

/** owner/name of a `/repos/{owner}/{name}/…` path (its token may be the App's for that repository). */
export function repoOf(path: string): string | undefined {
  const m = /^\/repos\/([^/?#]+)\/([^/?#]+)/.exec(path);
  return m ? `${decodeURIComponent(m[1])}/${decodeURIComponent(m[2])}` : undefined;
}

/** The project path of a GitLab `/projects/{url-encoded path}/…` request (its token may be the server's for it). */
export function projectOf(path: string): string | undefined {
  const m = /^\/projects\/([^/?#]+)/.exec(path);
  if (!m) return undefined;
  try {
    return decodeURIComponent(m[1]);
  } catch {
    return undefined;
  }
}

/** An error answer's text: GitHub's `message`, GitLab's `message` (a string, a list or a field → list map) or `error`. */
export function errorMessage(json: unknown): string {
  const j = json as { message?: unknown; error?: unknown } | null;
  const m = j?.message ?? j?.error;
  const text =
    typeof m === 'string'
      ? m
      : Array.isArray(m)
        ? m.map(String).join('; ')
        : m && typeof m === 'object'
          ? Object.entries(m)
              .map(([k, v]) => `${k} ${Array.isArray(v) ? v.join(', ') : String(v)}`)
              .join('; ')
          : '';
  return text.slice(0, 300);
}

/** GitLab's offset pagination: the same request with `page=<x-next-page>` (empty on the last page). */
export function nextPage(current: string, next: string | null): string | null {
  if (!next || !/^\d{1,6}$/.test(next.trim())) return null;
  const [path, query = ''] = current.split('?');
  const q = new URLSearchParams(query);
  q.set('page', next.trim());
  return `${path}?${q.toString()}`;
}

/** The `rel="next"` URL of a Link header. */
export function nextLink(link: string | null): string | null {
  if (!link) return null;
  for (const part of link.split(',')) {
    const m = /<([^>]+)>\s*;\s*rel="?next"?/.exec(part.trim());
    if (m) return m[1];
  }
  return null;
}

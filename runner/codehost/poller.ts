// The daemon's code-host collectors (docs/runner.md, "Code host"): for every project on the watch list
// that has a repo (owner/name),
//   the queue — its open issues — every queue.pollSeconds, kept in <state>/codehost/queue.json and
//     reported as a `codehost.queue` event when it changed;
//   its open pull requests and their head commits' checks every fleet.prPollSeconds, turned into pr.*
//     events by changes.ts and recorded in <state>/codehost/pulls.json.
// Order per project and poll: read everything; on any failure stop there (no events, nothing recorded:
// a code host that is down or answers garbage never looks like "every pull request closed"); spool
// the events; then record what was seen. A crash between the last two spools the same events again
// after a restart, with the same ids, and the server stores them once.
// While the client waits (rate limit spent, failure backoff), timed polls are skipped, not queued.
// `collector.poll` and `issues.refresh` poll at once; a poll already running is joined, not repeated.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createHash } from 'node:crypto';
import * as z from 'zod';
import type { ProjectEntry, RunnerConfig } from '../config.ts';
import { writeFileAtomic } from '../config.ts';
import { fleetSpoolEvent } from '../fleet.ts';
import { errorText, log } from '../log.ts';
import { stateDir } from '../paths.ts';
import type { Env } from '../paths.ts';
import type { NewEvent } from '../spool.ts';
import { diffPulls, missing } from './changes.ts';
import type { OpenPull, ProjectSeen } from './changes.ts';
import type { HostAdapter } from './adapter.ts';
import { CodeHostError, GitHubClient } from './client.ts';
import type { CodeHostStatus } from './client.ts';
import { githubAdapter } from './github-adapter.ts';
import { gitlabAdapter } from './gitlab.ts';
import { codehostFetch } from './ca-fetch.ts';
import { writeCodeHostState } from './state.ts';
import { Tokens } from './token.ts';

export const codehostDir = (env: Env) => join(stateDir(env), 'codehost');

interface QueueEntry {
  repo: string;
  seq: number;
  hash: string;
  at: string;
  issues: { number: number; title: string; url: string; labels: string[] }[];
}

function readJson<T>(file: string, fallback: T): T {
  try {
    return JSON.parse(readFileSync(file, 'utf8')) as T;
  } catch {
    return fallback;
  }
}

/** Test and benchmark override of the poll intervals, in milliseconds. */
const override = (v: string | undefined) => (v && /^\d{2,7}$/.test(v) ? Number(v) : null);

export interface CodeHostOptions {
  config: RunnerConfig;
  env: Env;
  projects: () => readonly ProjectEntry[];
  /** Spool events durably (returns once they are on disk) and send them. */
  append: (events: NewEvent[]) => void;
  fetch?: typeof fetch;
  now?: () => number;
}

/** A watch-list project with a code host: `repo` is owner/name on GitHub or the GitLab project path. */
export type HostedProject = ProjectEntry & { repo: string };

export class CodeHost {
  readonly client: GitHubClient;
  readonly tokens: Tokens;
  /** The GitLab tokens: the server's per project path (memory only), else GITLAB_TOKEN. */
  readonly gitlabTokens: Tokens;
  readonly github: HostAdapter;
  private readonly gitlab = new Map<string, HostAdapter>();
  /** The code-host calls' fetch: the global one, or one that trusts CODEHOST_CA_FILE too (ca-fetch.ts). */
  private readonly fetch: typeof fetch | undefined;
  private readonly pullsFile: string;
  private readonly queueFile: string;
  private readonly timers = new Set<NodeJS.Timeout>();
  private readonly running = new Map<string, Promise<unknown>>();
  private stopped = false;
  lastPollAt: string | null = null;

  constructor(private readonly o: CodeHostOptions) {
    const dir = codehostDir(o.env);
    this.pullsFile = join(dir, 'pulls.json');
    this.queueFile = join(dir, 'queue.json');
    this.tokens = new Tokens(o.env, o.config.codehost.apiUrl, () => o.config.profiles);
    this.fetch = o.fetch ?? codehostFetch(o.env);
    this.client = new GitHubClient({
      apiUrl: o.config.codehost.apiUrl,
      token: (repo) => this.tokens.forRepo(repo),
      fetch: this.fetch,
      now: o.now,
      backoffBaseMs: override(o.env.SVC_CODEHOST_BACKOFF_MS) ?? 2000,
      onStatus: (s) => this.onStatus(s),
      onUnauthorized: (repo, token) => this.tokens.refused(repo, token),
    });
    this.github = githubAdapter(this.client, o.config.codehost.apiUrl);
    this.gitlabTokens = new Tokens(o.env, 'https://gitlab.com', () => o.config.profiles, 'gitlab');
  }

  /** The server's tokens from a frame, for both kinds of host (each keeps its own). */
  setServerTokens(tokens: Parameters<Tokens['setServer']>[0], replace: boolean): void {
    this.tokens.setServer(tokens, replace);
    this.gitlabTokens.setServer(tokens, replace);
  }

  /** The adapter a project's code host is reached through: GitLab's for its instance, else GitHub's. */
  adapter(p: ProjectEntry): HostAdapter {
    if (!p.host) return this.github;
    const base = p.host.baseUrl.replace(/\/+$/, '');
    let a = this.gitlab.get(base);
    if (!a) {
      const client = new GitHubClient({
        kind: 'gitlab',
        apiUrl: `${base}/api/v4`,
        token: (path) => this.gitlabTokens.forRepo(path, undefined, new URL(base).hostname),
        fetch: this.fetch,
        now: this.o.now,
        backoffBaseMs: override(this.o.env.SVC_CODEHOST_BACKOFF_MS) ?? 2000,
        onStatus: (s) => this.onStatus(s, base),
        onUnauthorized: (path, token) => this.gitlabTokens.refused(path, token),
      });
      a = gitlabAdapter(client, base);
      this.gitlab.set(base, a);
    }
    return a;
  }

  get queueMs(): number {
    return override(this.o.env.SVC_QUEUE_POLL_MS) ?? this.o.config.queue.pollSeconds * 1000;
  }
  get pullsMs(): number {
    return override(this.o.env.SVC_PR_POLL_MS) ?? this.o.config.fleet.prPollSeconds * 1000;
  }

  start(): void {
    this.save();
    this.every(this.queueMs, () => this.pollQueue());
    this.every(this.pullsMs, () => this.pollPulls());
  }

  stop(): void {
    this.stopped = true;
    for (const t of this.timers) clearTimeout(t);
    this.timers.clear();
  }

  /** What `status` and runner.describe show: never a token. `appTokens`: the repositories the server's App tokens are for. */
  describe() {
    return { ...this.client.status, apiUrl: this.o.config.codehost.apiUrl, tokenSource: this.tokens.source, tokenName: this.tokens.sourceName, appTokens: this.tokens.serverRepos(), lastPollAt: this.lastPollAt, projects: this.withRepo().length };
  }

  private who: { key: string; login: string | null } | null = null;
  /** The login of the runner's own token (`GET /user`, asked once per token), null when it has none or GitHub does not say. */
  async login(): Promise<string | null> {
    const token = await this.tokens.get();
    if (!token) return null;
    const key = createHash('sha256').update(token).digest('hex');
    if (this.who?.key !== key) {
      const login = await this.client.request('GET', '/user', { schema: z.object({ login: z.string() }), urgent: true, token }).then((a) => a.data.login, () => null);
      this.who = { key, login };
    }
    return this.who.login;
  }

  private every(ms: number, poll: () => Promise<unknown>): void {
    const tick = async () => {
      if (this.stopped) return;
      await poll().catch(() => {}); // failures are logged per project; waiting hosts are skipped
      if (!this.stopped) this.timers.add(setTimeout(tick, ms));
    };
    this.timers.add(setTimeout(tick, Math.min(ms, 1000)));
  }

  /** The projects with a code host (GitLab's path as `repo`); a timed poll leaves out those whose host waits (rate limit, backoff). */
  withRepo(projectId?: string, urgent = true): HostedProject[] {
    return this.o
      .projects()
      .filter((p) => Boolean(p.host ?? p.repo) && (projectId === undefined || p.id === projectId))
      .map((p) => ({ ...p, repo: p.host?.path ?? p.repo! }))
      .filter((p) => urgent || !this.adapter(p).client.waiting());
  }

  /** Poll the queue of one project or all. A timed poll joins one already running for the same project;
   *  an urgent one (a command) waits for it and then polls, so it sees what changed before it was asked. */
  pollQueue(projectId?: string, urgent = false) {
    return Promise.all(this.withRepo(projectId, urgent).map((p) => this.once(`queue:${p.id}`, () => this.queueOf(p, urgent), urgent)));
  }

  pollPulls(projectId?: string, urgent = false) {
    return Promise.all(this.withRepo(projectId, urgent).map((p) => this.once(`pulls:${p.id}`, () => this.pullsOf(p, urgent), urgent)));
  }

  private async once<T>(key: string, work: () => Promise<T>, fresh: boolean): Promise<T> {
    let running = this.running.get(key);
    if (running && fresh) {
      await running.catch(() => {});
      running = this.running.get(key); // started after this request, so it is fresh enough to join
    }
    if (running) return running as Promise<T>;
    const p = work().finally(() => this.running.delete(key));
    this.running.set(key, p);
    return p;
  }

  private async queueOf(p: HostedProject, urgent: boolean) {
    try {
      const issues = (await this.adapter(p).openIssues(p.repo, { urgent })).items;
      const all = readJson<Record<string, QueueEntry>>(this.queueFile, {});
      const before = all[p.id]?.repo === p.repo ? all[p.id] : undefined;
      const hash = createHash('sha256').update(JSON.stringify(issues)).digest('hex').slice(0, 16);
      const at = new Date().toISOString();
      if (before?.hash !== hash) {
        const seq = (before?.seq ?? 0) + 1;
        const shown = issues.slice(0, 100);
        this.o.append([{ id: `gh.${p.id}.queue.${seq}`, source: `project:${p.id}`, kind: 'codehost.queue', payload: { project: p.id, repo: p.repo, count: issues.length, issues: shown, truncated: issues.length > shown.length } }]);
        all[p.id] = { repo: p.repo, seq, hash, at, issues };
        writeFileAtomic(this.queueFile, JSON.stringify(all) + '\n');
      }
      this.polled();
      return { projectId: p.id, repo: p.repo, count: issues.length, issues, changed: before?.hash !== hash };
    } catch (e) {
      this.report('queue', p, e);
      throw e;
    }
  }

  private async pullsOf(p: HostedProject, urgent: boolean) {
    try {
      const host = this.adapter(p);
      const list = await host.openPulls(p.repo, { urgent });
      const open: OpenPull[] = list.items;
      const all = readJson<Record<string, ProjectSeen>>(this.pullsFile, {});
      const gone = [];
      // An open list cut short (more than 1,000 open pull requests) cannot tell what closed.
      for (const n of list.complete ? missing(all[p.id], p.repo, open) : []) {
        const g = await host.pull(p.repo, n, { urgent });
        if (g?.state === 'open') continue; // opened in between the two requests: seen next time
        const seen = all[p.id].prs[n];
        gone.push({ number: n, merged: g?.state === 'merged', title: g?.title ?? seen.title, url: g?.url ?? seen.url });
      }
      const { next, events } = diffPulls(p.id, p.repo, all[p.id], open, gone);
      if (events.length) this.o.append(events.map((e) => ({ ...fleetSpoolEvent(e.event), id: e.id })));
      if (JSON.stringify(next) !== JSON.stringify(all[p.id])) {
        all[p.id] = next;
        writeFileAtomic(this.pullsFile, JSON.stringify(all) + '\n');
      }
      this.polled();
      return { projectId: p.id, repo: p.repo, open: open.length, pulls: open, events: events.map((e) => e.event.type) };
    } catch (e) {
      this.report('pull requests', p, e);
      throw e;
    }
  }

  private polled(): void {
    this.lastPollAt = new Date().toISOString();
    this.save();
  }

  private lastLogged = new Map<string, string>();
  /** Log a failed poll once per project and kind of failure (not once per poll). */
  private report(what: string, p: ProjectEntry, e: unknown): void {
    const code = e instanceof CodeHostError ? e.code : 'failed';
    const key = `${what}:${p.id}`;
    if (this.lastLogged.get(key) === code) return;
    this.lastLogged.set(key, code);
    log.warn(`code host: polling the ${what} of project ${p.id} failed`, { code, error: errorText(e) });
  }

  private onStatus(s: CodeHostStatus, gitlab?: string): void {
    const who = gitlab ? `code host (GitLab ${gitlab})` : 'code host';
    if (s.state === 'ok') this.lastLogged.clear();
    if (s.state === 'rate_limited') log.warn(`${who}: rate limit spent; no requests until ${s.until}`);
    else if (s.state === 'backoff') log.warn(`${who}: failing (${s.lastError}); polls wait until ${s.until}`);
    else if (s.state === 'no_token') log.warn(`${who}: ${s.lastError}`);
    else log.info(`${who}: ${s.state}`);
    this.save();
  }

  private lastSaved = 0;
  private save(): void {
    const now = Date.now();
    if (now - this.lastSaved < 1000 && this.client.status.state === 'ok') return;
    this.lastSaved = now;
    try {
      writeCodeHostState(this.o.env, this.describe());
    } catch (e) {
      log.warn('could not record the code-host state for `status`', { error: errorText(e) });
    }
  }
}

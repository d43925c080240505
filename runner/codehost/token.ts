// Where the code-host token comes from (docs/runner.md, "Code host"), first found wins:
//   0. for a repository an App acts for (App mode, docs/github-app.md): the installation token the server
//      sent for it (command and `projects` frames), while it has more than SERVER_TOKEN_MARGIN_MS left —
//      kept in memory only, never written anywhere;
//   1. a runtime profile's env: GH_TOKEN, then GITHUB_TOKEN — the run's profile for a skill run, the
//      first profile that has one for polls and commands;
//   2. the runner's own environment: GH_TOKEN, then GITHUB_TOKEN;
//   3. `gh auth token` (with `--hostname <host>` for GitHub Enterprise) when `gh` is on PATH.
// A token is added to the log redaction list as soon as it is read. gh's answer is cached for five
// minutes (a miss for one), so polls do not spawn a process each time.
import { execFile } from 'node:child_process';
import type { CodehostToken } from '../../protocol/frames.ts';
import type { Profile } from '../config.ts';
import { redact } from '../log.ts';
import type { Env } from '../paths.ts';
import { findExecutable } from '../profiles.ts';

// For a GitLab host (gitlab.ts) the same order with GITLAB_TOKEN, the server's token being the
// project's stored access token, then `glab auth status --hostname <instance> --show-token` when `glab`
// is on PATH (it is not required; its answer cached as gh's, per instance).
const NAMES = { github: ['GH_TOKEN', 'GITHUB_TOKEN'], gitlab: ['GITLAB_TOKEN'] } as const;

export type TokenSource = 'profile' | 'environment' | 'gh' | 'glab' | null;

/** A server token with less than this left is not used: the runner's own token is (the server sends a new one long before). */
export const SERVER_TOKEN_MARGIN_MS = 30_000;

/** The `--hostname` for gh: none for github.com's API, the host for an Enterprise server. */
export function ghHost(apiUrl: string): string | null {
  const host = new URL(apiUrl).hostname;
  return host === 'api.github.com' ? null : host;
}

function ghToken(env: Env, apiUrl: string): Promise<string | null> {
  const gh = findExecutable('gh', env);
  if (!gh) return Promise.resolve(null);
  const host = ghHost(apiUrl);
  return new Promise((resolve) => {
    execFile(gh, ['auth', 'token', ...(host ? ['--hostname', host] : [])], { env: env as NodeJS.ProcessEnv, timeout: 10_000 }, (err, stdout) => {
      const t = String(stdout).trim();
      resolve(!err && /^[\x21-\x7e]{8,1024}$/.test(t) ? t : null);
    });
  });
}

/** glab's token for an instance: `glab auth status` prints `Token: <token>` with --show-token (on stderr). */
function glabToken(env: Env, host: string): Promise<string | null> {
  const glab = findExecutable('glab', env);
  if (!glab) return Promise.resolve(null);
  return new Promise((resolve) => {
    execFile(glab, ['auth', 'status', '--hostname', host, '--show-token'], { env: { ...(env as NodeJS.ProcessEnv), NO_COLOR: '1', GLAB_NO_PROMPT: '1' }, timeout: 10_000 }, (err, stdout, stderr) => {
      const t = /Token:\s*([\x21-\x7e]{8,1024})\s*$/m.exec(`${stdout}\n${stderr}`)?.[1];
      resolve(!err && t && !/^\*+$/.test(t) ? t : null);
    });
  });
}

export class Tokens {
  private readonly names: readonly string[];
  private readonly fromEnv = (env: Record<string, string | undefined>) => this.names.map((n) => env[n]?.trim()).find((v) => v) ?? null;
  private readonly nameIn = (env: Record<string, string | undefined>) => this.names.find((n) => env[n]?.trim()) ?? null;
  private gh: { value: string | null; at: number } | null = null;
  private readonly glab = new Map<string, { value: string | null; at: number }>();
  /** The server's installation tokens by repository (lower case): memory only. */
  private readonly server = new Map<string, { token: string; expiresAt: number }>();
  /** Where the runner's own token came from (the server's tokens are not counted). */
  source: TokenSource = null;
  /** The variable it was read from (GH_TOKEN or GITHUB_TOKEN), for a profile or the environment. */
  sourceName: string | null = null;
  now: () => number = Date.now;

  /** The server's tokens from a frame: `replace` (a watch list) drops those of repositories it no longer names. */
  setServer(tokens: readonly CodehostToken[], replace: boolean): void {
    if (replace) this.server.clear();
    // A token is for one host kind: a GitLab project's token never goes to GitHub, nor the reverse.
    for (const t of tokens.filter((x) => (x.kind ?? 'github') === this.kind)) {
      redact(t.token);
      this.server.set(t.repo.toLowerCase(), { token: t.token, expiresAt: Date.parse(t.expiresAt) });
    }
  }

  /** GitHub refused a server token (the App's installation was removed): the runner's own is used until the server sends another. */
  refused(repo: string | undefined, token: string): boolean {
    const key = repo?.toLowerCase();
    if (!key || this.server.get(key)?.token !== token) return false;
    this.server.delete(key);
    return true;
  }

  /** The server's token for owner/name while it has more than SERVER_TOKEN_MARGIN_MS left, else null. */
  serverToken(repo: string | undefined): { token: string; expiresAt: string } | null {
    const t = repo ? this.server.get(repo.toLowerCase()) : undefined;
    if (!t || t.expiresAt - this.now() <= SERVER_TOKEN_MARGIN_MS) return null;
    return { token: t.token, expiresAt: new Date(t.expiresAt).toISOString() };
  }

  /** The repositories with a usable server token and when each expires (never the token). */
  serverRepos(): { repo: string; expiresAt: string }[] {
    return [...this.server.keys()].flatMap((repo) => {
      const t = this.serverToken(repo);
      return t ? [{ repo, expiresAt: t.expiresAt }] : [];
    });
  }

  /** The token for a repository: the server's (App mode) when it has a valid one, else the runner's own
   *  (`host`: the GitLab instance's host name, for glab). */
  async forRepo(repo: string | undefined, profileId?: string, host?: string): Promise<string | null> {
    return this.serverToken(repo)?.token ?? (await this.get(profileId, host));
  }

  constructor(
    private readonly env: Env,
    private readonly apiUrl: string,
    private readonly profiles: () => readonly Profile[],
    private readonly kind: 'github' | 'gitlab' = 'github',
  ) {
    this.names = NAMES[kind];
  }

  /** The token for a profile (a skill run's), else the first profile's that has one, else the rest. */
  async get(profileId?: string, host?: string): Promise<string | null> {
    const profiles = this.profiles();
    const own = profileId ? profiles.find((p) => p.id === profileId) : undefined;
    const { fromEnv, nameIn } = this;
    const fromProfile = (own && fromEnv(own.env)) ?? profiles.map((p) => fromEnv(p.env)).find((v) => v) ?? null;
    const found = fromProfile ?? fromEnv(this.env) ?? (this.kind === 'github' ? await this.fromGh() : host ? await this.fromGlab(host) : null);
    this.source = fromProfile ? 'profile' : fromEnv(this.env) ? 'environment' : found ? (this.kind === 'github' ? 'gh' : 'glab') : null;
    const profile = fromProfile ? ((own && fromEnv(own.env) && own) || profiles.find((p) => fromEnv(p.env))) : undefined;
    this.sourceName = profile ? nameIn(profile.env) : this.source === 'environment' ? nameIn(this.env) : null;
    if (found) redact(found);
    return found;
  }

  private async fromGlab(host: string): Promise<string | null> {
    const now = Date.now();
    const c = this.glab.get(host);
    if (c && now - c.at < (c.value ? 5 * 60_000 : 60_000)) return c.value;
    const value = await glabToken(this.env, host);
    this.glab.set(host, { value, at: now });
    return value;
  }

  private async fromGh(): Promise<string | null> {
    const now = Date.now();
    if (this.gh && now - this.gh.at < (this.gh.value ? 5 * 60_000 : 60_000)) return this.gh.value;
    this.gh = { value: await ghToken(this.env, this.apiUrl), at: now };
    return this.gh.value;
  }
}

// Where the code-host token comes from (docs/runner.md, "Code host"), first found wins:
//   1. a runtime profile's env: GH_TOKEN, then GITHUB_TOKEN — the run's profile for a skill run, the
//      first profile that has one for polls and commands;
//   2. the runner's own environment: GH_TOKEN, then GITHUB_TOKEN;
//   3. `gh auth token` (with `--hostname <host>` for GitHub Enterprise) when `gh` is on PATH.
// A token is added to the log redaction list as soon as it is read. gh's answer is cached for five
// minutes (a miss for one), so polls do not spawn a process each time.
import { execFile } from 'node:child_process';
import type { Profile } from '../config.ts';
import { redact } from '../log.ts';
import type { Env } from '../paths.ts';
import { findExecutable } from '../profiles.ts';

const NAMES = ['GH_TOKEN', 'GITHUB_TOKEN'] as const;
const fromEnv = (env: Record<string, string | undefined>) => NAMES.map((n) => env[n]?.trim()).find((v) => v) ?? null;

export type TokenSource = 'profile' | 'environment' | 'gh' | null;

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

export class Tokens {
  private gh: { value: string | null; at: number } | null = null;
  source: TokenSource = null;

  constructor(
    private readonly env: Env,
    private readonly apiUrl: string,
    private readonly profiles: () => readonly Profile[],
  ) {}

  /** The token for a profile (a skill run's), else the first profile's that has one, else the rest. */
  async get(profileId?: string): Promise<string | null> {
    const profiles = this.profiles();
    const own = profileId ? profiles.find((p) => p.id === profileId) : undefined;
    const fromProfile = (own && fromEnv(own.env)) ?? profiles.map((p) => fromEnv(p.env)).find((v) => v) ?? null;
    const found = fromProfile ?? fromEnv(this.env) ?? (await this.fromGh());
    this.source = fromProfile ? 'profile' : fromEnv(this.env) ? 'environment' : found ? 'gh' : null;
    if (found) redact(found);
    return found;
  }

  private async fromGh(): Promise<string | null> {
    const now = Date.now();
    if (this.gh && now - this.gh.at < (this.gh.value ? 5 * 60_000 : 60_000)) return this.gh.value;
    this.gh = { value: await ghToken(this.env, this.apiUrl), at: now };
    return this.gh.value;
  }
}

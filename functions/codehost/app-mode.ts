// App mode on the runners (docs/github-app.md, "App mode on the runners"; issue #36 item 1): which
// registered App, if any, acts for a repository, and the installation tokens the server hands to runners.
//   - A repository is in App mode when a registered App with its App ID and private key is installed on
//     it: the Apps are tried oldest first and the first that gets a token (app-token.ts) wins.
//   - When none does, the reason (no App registered, not installed, revoked, bad key, …) is kept for
//     NEGATIVE_TTL_MS, so a burst of commands does not ask GitHub each time; the command goes out without
//     a token and the runner uses its own.
//   - Tokens go only to runners that announced CODEHOST_TOKENS_CAPABILITY, in the frame's `codehost`
//     field: never in a command's args, a runner_commands row, an audit record or a log line.
import { CODEHOST_COMMANDS } from '../../protocol/commands.ts';
import { CODEHOST_TOKENS_CAPABILITY, MAX_CODEHOST_TOKENS, REPO } from '../../protocol/frames.ts';
import type { CodehostToken } from '../../protocol/frames.ts';
import { sql } from '../lib/db/index.ts';
import { installationToken } from './app-token.ts';
import { gitlabTokens } from './gitlab-tokens.ts';
import type { AppDeps, AppError } from './app-token.ts';
import type { AppRow } from './apps.ts';

/** How long "no App acts for this repository" is believed before GitHub is asked again. */
export const NEGATIVE_TTL_MS = 60_000;

export type RepoMode =
  | { mode: 'app'; appId: string; appName: string; installationId: number; token: string; expiresAt: string }
  | { mode: 'runner'; error: AppError };

export class AppTokenSource {
  private readonly misses = new Map<string, { at: number; error: AppError }>();

  constructor(private readonly deps: AppDeps) {}

  /** Which App acts for owner/name and its token, or why none does. */
  async forRepo(fullName: string): Promise<RepoMode> {
    const repo = fullName.toLowerCase();
    const miss = this.misses.get(repo);
    if (miss && this.deps.clock.now() - miss.at < NEGATIVE_TTL_MS) return { mode: 'runner', error: miss.error };
    const apps = await this.deps.db.query<AppRow>(sql`
      select * from codehost_apps where github_app_id is not null and private_key_ciphertext is not null order by created_at, id`);
    const failed: { app: AppRow; error: AppError }[] = [];
    for (const app of apps) {
      const got = await installationToken(this.deps, app, repo);
      if (got.ok) {
        this.misses.delete(repo);
        return { mode: 'app', appId: app.id, appName: app.name, installationId: got.value.installationId, token: got.value.token, expiresAt: got.value.expiresAt };
      }
      failed.push({ app, error: got.error });
    }
    // "Not installed" says least: another App's reason (revoked, bad key, suspended) gives the code; the message names each App's.
    const first = failed.find((f) => f.error.code !== 'not_installed') ?? failed[0];
    const error: AppError = !first
      ? { code: 'no_app', message: 'no GitHub App with an App ID and a private key is registered (Settings → GitHub App)' }
      : failed.length === 1
        ? first.error
        : { code: first.error.code, message: failed.map((f) => `App ${f.app.name}: ${f.error.message}`).join('; ').slice(0, 2000) };
    this.misses.set(repo, { at: this.deps.clock.now(), error });
    if (this.misses.size > 10_000) this.misses.delete(this.misses.keys().next().value!);
    return { mode: 'runner', error };
  }

  /** The tokens of these repositories that an App acts for (the others are left out: the runner uses its own). */
  async tokens(repos: Iterable<string>): Promise<CodehostToken[]> {
    const unique = [...new Set([...repos].filter((r) => REPO.test(r)).map((r) => r.toLowerCase()))].slice(0, MAX_CODEHOST_TOKENS);
    const out: CodehostToken[] = [];
    for (const repo of unique) {
      const m = await this.forRepo(repo);
      if (m.mode === 'app') out.push({ repo, token: m.token, expiresAt: m.expiresAt });
    }
    return out;
  }

  /** Whether the runner takes tokens (it announced CODEHOST_TOKENS_CAPABILITY in its last hello). */
  async takesTokens(runnerId: string): Promise<boolean> {
    const [r] = await this.deps.db.query<{ capabilities: unknown }>(sql`select capabilities from runners where id = ${runnerId}`);
    return Array.isArray(r?.capabilities) && r.capabilities.includes(CODEHOST_TOKENS_CAPABILITY);
  }

  /** The runner's projects' tokens, for its watch list; undefined when the runner does not take them. */
  async forRunner(runnerId: string): Promise<CodehostToken[] | undefined> {
    if (!(await this.takesTokens(runnerId))) return undefined;
    const rows = await this.deps.db.query<{ repo: string }>(sql`select repo from projects where runner_id = ${runnerId} and root_path is not null and repo <> ''`);
    return [...(await this.tokens(rows.map((r) => r.repo))), ...(await gitlabTokens(this.deps.db, this.deps.key, runnerId))];
  }

  /**
   * The tokens a command's frame carries: for a code-host command (CODEHOST_COMMANDS), the repository of
   * its project, or of every project of the runner for collector.poll without one; undefined otherwise.
   */
  async forCommand(runnerId: string, name: string, args: unknown): Promise<CodehostToken[] | undefined> {
    if (!CODEHOST_COMMANDS.has(name) || !(await this.takesTokens(runnerId))) return undefined;
    const projectId = (args as { projectId?: unknown } | null)?.projectId;
    if (typeof projectId !== 'string') return name === 'collector.poll' ? this.forRunner(runnerId) : undefined;
    const rows = await this.deps.db.query<{ repo: string }>(sql`select repo from projects where id = ${projectId} and runner_id = ${runnerId}`);
    return [...(await this.tokens(rows.map((r) => r.repo))), ...(await gitlabTokens(this.deps.db, this.deps.key, runnerId, projectId))];
  }
}

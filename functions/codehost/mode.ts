// GET /api/projects/:projectId/codehost-mode (docs/github-app.md, "App mode on the runners"): which token
// the project's code-host work runs on, and why, for the Projects page.
//   1. App mode when a registered App is installed on the project's repository (app-mode.ts, asked anew:
//      a cached token, or a new one minted, then tried on the repository: a removed installation's
//      cached token is dropped) — "App installed on acme/app (App <name>)";
//   2. else the runner's own token, as its runner.describe says (source, variable, and the login GitHub
//      gives for it) — "runner token: gh auth as @alice", "runner token: GH_TOKEN";
//   3. else neither: a warning that says why each does not work.
// Viewers of the project may ask; the answer never holds a token.
import { codehostMode } from '../../protocol/api/codehost-mode.ts';
import type { CodehostMode } from '../../protocol/api/codehost-mode.ts';
import { REPO } from '../../protocol/frames.ts';
import type { AppContext, Route } from '../lib/context.ts';
import { sql } from '../lib/db/index.ts';
import { json, notFound } from '../lib/errors.ts';
import { projectRoute } from '../lib/project-routes.ts';
import { checkRepository } from './app-check.ts';
import { AppTokenSource } from './app-mode.ts';
import { appRow } from './apps.ts';
import { checkGitlab, codehostTls } from './gitlab-check.ts';
import { codehostRow, storedToken } from './gitlab-config.ts';

/** A GitLab project (docs/gitlab.md): the stored token checked now, or the runner's GITLAB_TOKEN. */
async function gitlabMode(ctx: AppContext, projectId: string): Promise<Pick<CodehostMode, 'repo' | 'mode' | 'reason' | 'warning'> | null> {
  const row = await codehostRow(ctx.db, projectId);
  if (!row) return null;
  const where = `${row.project_path} on ${row.base_url}`;
  if (!row.token_ciphertext) return { repo: row.project_path, mode: 'runner', reason: `runner token: GITLAB_TOKEN for ${where} (no token stored on the server; the server cannot check the runner's)`, warning: null };
  const token = storedToken(row, ctx.keys.encryption);
  if (!token) return { repo: row.project_path, mode: 'none', reason: `the GitLab token stored for ${where} does not decrypt with the current APP_ENCRYPTION_KEY`, warning: 'set the GitLab code host again with its token' };
  const c = await checkGitlab(ctx.db, row.base_url, row.project_path, token, codehostTls(ctx.config));
  return c.ok
    ? { repo: row.project_path, mode: 'gitlab', reason: `GitLab token stored on the server for ${where}: checked, it can read the project and has the api and write_repository scopes`, warning: null }
    : { repo: row.project_path, mode: 'gitlab', reason: `GitLab token stored on the server for ${where}`, warning: `the GitLab token does not work: ${c.error}` };
}

type RunnerView = NonNullable<CodehostMode['runner']>;

/** What the runner's runner.describe says of its own code-host token; null when it cannot be asked. */
async function runnerToken(ctx: AppContext, runnerId: string, userId: string): Promise<RunnerView> {
  const offline: RunnerView = { online: false, tokenSource: null, tokenName: null, login: null, state: null, lastError: null };
  if (!(await ctx.hub.isOnline(runnerId))) return offline;
  const out = await ctx.hub.command(runnerId, 'runner.describe', {}, userId);
  if (out.status !== 'done') return { ...offline, online: out.status !== 'offline', lastError: out.status === 'failed' ? out.error.message : `runner.describe: ${out.status}` };
  const c = (out.data as { codehost?: Record<string, unknown> } | null)?.codehost ?? {};
  const text = (v: unknown) => (typeof v === 'string' && v ? v.slice(0, 500) : null);
  return { online: true, tokenSource: text(c.tokenSource), tokenName: text(c.tokenName), login: text(c.login), state: text(c.state), lastError: text(c.lastError) };
}

function describeRunnerToken(r: RunnerView): string | null {
  if (!r.tokenSource || r.state === 'no_token') return null;
  const as = r.login ? ` as @${r.login}` : '';
  if (r.tokenSource === 'gh') return `runner token: gh auth${as}`;
  const name = r.tokenName ?? 'GH_TOKEN';
  return r.tokenSource === 'profile' ? `runner token: ${name} of a runtime profile${as}` : `runner token: ${name}${as}`;
}

export async function codehostModeOf(ctx: AppContext, projectId: string, userId: string): Promise<CodehostMode> {
  const [p] = await ctx.db.query<{ repo: string; runner_id: string | null }>(sql`select repo, runner_id from projects where id = ${projectId}`);
  if (!p) throw notFound('no such project');
  const base = { projectId, app: null, appError: null, runner: null };
  const gitlab = await gitlabMode(ctx, projectId);
  if (gitlab) return { ...base, ...gitlab };
  if (!REPO.test(p.repo)) return { ...base, repo: null, mode: 'none', reason: 'no code-host repository (owner/name) is set for this project', warning: 'set the repository (owner/name) to poll its issues and pull requests' };
  const deps = { db: ctx.db, key: ctx.keys.encryption, clock: ctx.clock, log: ctx.log };
  let mode = await new AppTokenSource(deps).forRepo(p.repo);
  if (mode.mode === 'app') {
    // The token is tried on the repository (app-check.ts): a cached one of a removed installation is dropped and minted again, once.
    const app = await appRow(ctx.db, mode.appId);
    const tried = app ? await checkRepository(deps, app, p.repo) : { error: { code: 'app_gone', message: 'the App was deleted meanwhile' } };
    if (tried.error) mode = { mode: 'runner', error: tried.error };
  }
  if (mode.mode === 'app') {
    return {
      ...base,
      repo: p.repo,
      mode: 'app',
      reason: `App installed on ${p.repo} (App ${mode.appName}, installation ${mode.installationId})`,
      warning: null,
      app: { id: mode.appId, name: mode.appName, installationId: mode.installationId, tokenExpiresAt: mode.expiresAt },
    };
  }
  const runner = p.runner_id ? await runnerToken(ctx, p.runner_id, userId) : null;
  const own = runner && describeRunnerToken(runner);
  const noApp = mode.error.code === 'no_app' ? 'no GitHub App is registered' : `no App token: ${mode.error.message}`;
  if (own) return { ...base, repo: p.repo, mode: 'runner', reason: `${own} (${noApp})`, warning: null, appError: mode.error, runner };
  const why = !p.runner_id ? 'the project has no runner' : !runner?.online ? 'its runner is offline' : `its runner has no code-host token${runner.lastError ? ` (${runner.lastError})` : ''}`;
  return { ...base, repo: p.repo, mode: 'none', reason: `neither works: ${noApp}; ${why}`, warning: `no code-host token works for ${p.repo}: install the GitHub App on it, or give the runner a token (GH_TOKEN, or gh auth login)`, appError: mode.error, runner };
}

export const routes: Route[] = [
  projectRoute('viewer', { method: 'GET', path: '/codehost-mode', tag: 'codehost',
    summary: "Which token the project's code-host work runs on and why: the GitHub App's (installed on the repository) or the runner's own (its source and login), with a warning when neither works. Never a token",
    responses: { 200: { description: 'the mode, the reason, and what the App and the runner said', schema: codehostMode } },
    handler: async ({ params, principal }, ctx) => json(await codehostModeOf(ctx, params.projectId, principal!.user.id)),
  }),
];

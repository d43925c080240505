// Opening a skill run's pull request (docs/skill-runs.md, "Pull request output"): after the run
// succeeded with commits on `svc/run-<runId>`,
//   1. push the branch to the project's `origin` remote with the run profile's credentials: the
//      profile's env (SSH keys, GIT_SSH_COMMAND, …) and, for an https remote on the code host's own
//      host, the token as an HTTP header (`http.extraHeader: Authorization: Basic
//      base64(x-access-token:TOKEN)`) passed through GIT_CONFIG_* variables to that one git command:
//      never on its command line (another user's `ps` would show it), never in the remote URL, never to
//      another host. In App mode (docs/github-app.md) the token is the App's installation token for the
//      repository, so the push is the App's bot's;
//   2. open the pull request — or find the one already open from that branch (a daemon killed after
//      opening it asks again) — against the repository's default branch, its title the report's first
//      line and its body the report.
// Any failure (no repo, no token, push refused, HTTP 403 for a token without the scope) becomes
// `openError` in the run's record; the branch and the patch stay, and the run still succeeded.
import { execFile } from 'node:child_process';
import { bundleFile } from './ca-fetch.ts';
import type { Profile } from '../config.ts';
import type { HostAdapter } from './adapter.ts';
import { CodeHostError } from './client.ts';
import type { Tokens } from './token.ts';

export { gitHost } from './github-adapter.ts';

export interface PullLink {
  url?: string;
  number?: number;
  openError?: string;
}

export interface PublishInput {
  root: string;
  repo: string | undefined;
  branch: string;
  runId: string;
  skill: string;
  profile: Profile | undefined;
  report: string | null;
  /** The title and body to open it with (a slot's worker: `svc-runner pr-create`); else made from the report. */
  text?: { title: string; body: string };
}

const SCOPE_HINT = 'give the token write access (GitHub fine-grained: Contents and Pull requests read and write; classic: the repo scope; GitLab: scopes api and write_repository, role Developer or more)';

/** The pull request's title and body from the run's report. */
export function titleAndBody(report: string | null, skill: string, runId: string): { title: string; body: string } {
  const first = (report ?? '')
    .split('\n')
    .map((l) => l.replace(/^#+\s*/, '').trim())
    .find((l) => l);
  const title = (first ?? `${skill}: svc skill run ${runId}`).slice(0, 200);
  const footer = `\n\n---\nOpened by svc skill run \`${runId}\` (skill \`${skill}\`).`;
  return { title, body: `${(report ?? '').slice(0, 60_000)}${footer}`.trim() };
}


function run(cwd: string, args: string[], env: NodeJS.ProcessEnv): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile('git', ['-c', 'core.fsmonitor=false', ...args], { cwd, env, timeout: 120_000, maxBuffer: 4 * 1024 * 1024 }, (err, stdout, stderr) => {
      const e = err as (NodeJS.ErrnoException & { code?: number | string }) | null;
      resolve({ code: e ? (typeof e.code === 'number' ? e.code : 1) : 0, stdout: String(stdout), stderr: String(stderr || (e && typeof e.code === 'string' ? `git could not run (${e.code})` : '')) });
    });
  });
}

async function push(input: PublishInput, token: string, git: HostAdapter['git']): Promise<string | null> {
  const env: NodeJS.ProcessEnv = { ...process.env, ...(input.profile?.env ?? {}), GIT_TERMINAL_PROMPT: '0', LC_ALL: 'C' };
  for (const k of ['GIT_DIR', 'GIT_WORK_TREE', 'GIT_INDEX_FILE', 'GIT_CONFIG_COUNT']) delete env[k];
  const url = (await run(input.root, ['remote', 'get-url', 'origin'], env)).stdout.trim();
  if (!url) return 'the project has no `origin` remote to push the branch to';
  let host: string | null = null;
  try {
    const u = new URL(url);
    host = u.protocol === 'https:' ? u.hostname : null;
  } catch {}
  if (host && host === git.host) {
    Object.assign(env, {
      GIT_CONFIG_COUNT: '1',
      GIT_CONFIG_KEY_0: 'http.extraHeader',
      GIT_CONFIG_VALUE_0: `Authorization: Basic ${Buffer.from(`${git.user}:${token}`).toString('base64')}`,
    });
    // A self-managed instance's own CA (CODEHOST_CA_FILE): the system's roots plus it, for this push only.
    const bundle = bundleFile(process.env);
    if (bundle) Object.assign(env, { GIT_CONFIG_COUNT: '2', GIT_CONFIG_KEY_1: 'http.sslCAInfo', GIT_CONFIG_VALUE_1: bundle });
  }
  const r = await run(input.root, ['push', '--porcelain', 'origin', `refs/heads/${input.branch}:refs/heads/${input.branch}`], env);
  if (r.code === 0) return null;
  const header = env.GIT_CONFIG_VALUE_0 ?? '';
  const why = [token, header.replace(/^Authorization: Basic /, '')].filter(Boolean).reduce((t, secret) => t.split(secret).join('[redacted]'), r.stderr).trim().slice(-400);
  return /403|denied|not allowed|permission/i.test(why) ? `git push was refused: ${why}; ${SCOPE_HINT}` : `git push failed: ${why}`;
}

export async function openRunPull(host: HostAdapter, tokens: Tokens, input: PublishInput): Promise<PullLink> {
  if (!input.repo) return { openError: 'the project has no code-host repository on this runner (the server sends it with the watch list); the branch stays local' };
  const token = await tokens.forRepo(input.repo, input.profile?.id, host.kind === 'gitlab' ? host.git.host : undefined);
  if (!token) {
    const how = host.kind === 'gitlab' ? 'store a GitLab token for the project on the server, or set GITLAB_TOKEN in the profile or the environment' : 'set GH_TOKEN or GITHUB_TOKEN in the profile or the environment, or sign in with `gh auth login`';
    return { openError: `no code-host token: ${how}; the branch stays local` };
  }
  const pushed = await push(input, token, host.git);
  if (pushed) return { openError: pushed };
  try {
    const existing = await host.pullFromBranch(input.repo, input.branch, { token });
    if (existing) return existing;
    const { title, body } = input.text ?? titleAndBody(input.report, input.skill, input.runId);
    const pr = await host.createPull(input.repo, { title, body, head: input.branch, base: await host.defaultBranch(input.repo, { token }) }, { token });
    return { url: pr.url, number: pr.number };
  } catch (e) {
    if (e instanceof CodeHostError && e.status === 403 && e.code === 'http') return { openError: `the code-host token may not open pull requests on ${input.repo} (${e.message}); ${SCOPE_HINT}` };
    return { openError: `the pull request could not be opened: ${e instanceof Error ? e.message : String(e)}` };
  }
}

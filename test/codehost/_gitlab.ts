// Shared by the GitLab end-to-end tests (gitlab-runner, gitlab-loop): the real server with an encryption
// key and 127.0.0.1 on the outbound allowlist, a sandboxed machine paired with the real runner bundle
// (a `claude` profile, no GitLab token of its own), a git project on it, and the project's code host set
// to the fake GitLab with its token stored on the server. The caller starts the daemon.
import { execFileSync } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import * as assert from 'uvu/assert';
import type { GitLabFake } from '../fakes/gitlab.ts';
import { serverDbEnv } from '../helpers/db.ts';
import { startServer } from '../helpers/server.ts';
import type { RunningServer } from '../helpers/server.ts';
import { runCli, sandbox } from '../runner/_harness.ts';
import type { Sandbox } from '../runner/_harness.ts';

export interface GitlabProject {
  dbEnv: { env: Record<string, string>; cleanup: () => Promise<void> };
  server: RunningServer;
  sb: Sandbox;
  projectId: string;
  root: string;
  /** The PUT …/codehost answer (webhookUrl, webhookSecret, check). */
  codehost: { webhookUrl: string; webhookSecret: string };
  /** Stop the server, drop its database and remove the sandbox (the caller stops daemons and the fake first). */
  cleanup: () => Promise<void>;
}

export async function gitlabProject(gl: GitLabFake, path: string, o: { serverEnv?: Record<string, string>; profileEnv?: Record<string, string>; keyByte: number }): Promise<GitlabProject> {
  const dbEnv = await serverDbEnv();
  const server = await startServer({ admin: true, dbEnv: dbEnv.env, env: { APP_ENCRYPTION_KEY: Buffer.alloc(32, o.keyByte).toString('base64'), ...o.serverEnv } });
  assert.is((await server.api('/api/webhooks/allowlist', { method: 'PUT', json: { allowlist: '127.0.0.1' } })).status, 200);
  const sb = sandbox();
  const made = await (await server.api('/api/runners', { method: 'POST', json: { name: 'gitlab' } })).json();
  const paired = await runCli(sb, ['pair', '--server', server.url, '--code', made.code, '--no-detect']);
  assert.is(paired.status, 0, paired.stderr);
  sb.writeConfig({ ...sb.readConfig(), profiles: [{ id: 'cc', runtime: 'claude', env: o.profileEnv ?? {}, args: [] }] });
  const root = join(sb.dir, 'work', 'app');
  mkdirSync(root, { recursive: true });
  const git = (...a: string[]) => execFileSync('git', a, { cwd: root, env: { ...process.env, GIT_AUTHOR_NAME: 't', GIT_AUTHOR_EMAIL: 't@example.com', GIT_COMMITTER_NAME: 't', GIT_COMMITTER_EMAIL: 't@example.com' } });
  git('init', '-q', '-b', 'main');
  git('commit', '-q', '--allow-empty', '-m', 'init');
  const res = await server.api('/api/projects', { method: 'POST', json: { name: 'app', repo: 'acme/app', runnerId: made.runner.id, rootPath: root } });
  assert.is(res.status, 201, await res.clone().text());
  const body = await res.json();
  const projectId = body.id ?? body.project?.id;
  const put = await server.api(`/api/projects/${projectId}/codehost`, { method: 'PUT', json: { kind: 'gitlab', baseUrl: gl.url, projectPath: path, token: gl.token } });
  assert.is(put.status, 200, await put.clone().text());
  const cleanup = async () => {
    await server.cleanup();
    await dbEnv.cleanup();
    sb.cleanup();
  };
  return { dbEnv, server, sb, projectId, root, codehost: await put.json(), cleanup };
}

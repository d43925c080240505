// A worker's merge request on a self-managed GitLab with its own CA (issue 42; docs/gitlab.md): the real
// runner bundle and daemon push the slot's branch with real git over HTTPS to a real `git http-backend`
// behind a certificate of a test CA (test/fakes/git-https.ts), with the token the server stored for the
// project — memory only on the runner, in that one git command's environment as
// `Authorization: Basic base64(oauth2:TOKEN)` — then open the merge request on the fake GitLab (HTTPS,
// same CA). Without CODEHOST_CA_FILE in the runner's environment the push fails on the certificate (exit
// 1, the token in no message); with it the branch arrives and every request git made carried the token.
// needs: git openssl
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { gitHttps } from '../fakes/git-https.ts';
import type { GitHttps } from '../fakes/git-https.ts';
import { gitlabFake } from '../fakes/gitlab.ts';
import type { GitLabFake } from '../fakes/gitlab.ts';
import { makeTestCa } from '../fakes/test-ca.ts';
import { killDaemons, runCli, startDaemon, waitUntil } from '../runner/_harness.ts';
import { gitlabProject } from './_gitlab.ts';
import type { GitlabProject } from './_gitlab.ts';

const PATH = 'infra/selfhosted/app';
const dir = mkdtempSync(join(tmpdir(), 'svc-glpush-'));
let ca: string;
let gl: GitLabFake;
let git: GitHttps;
let g: GitlabProject;

test.before(async () => {
  const made = makeTestCa(dir);
  ca = made.ca;
  gl = await gitlabFake({ tls: made, prefix: '/gitlab' });
  gl.project(PATH);
  g = await gitlabProject(gl, PATH, { keyByte: 9, serverEnv: { CODEHOST_CA_FILE: ca } });
  git = await gitHttps(join(dir, 'git'), made, { user: 'oauth2', token: gl.token });
});
test.after(async () => {
  await killDaemons();
  await g?.cleanup();
  await gl?.close();
  await git?.close();
  rmSync(dir, { recursive: true, force: true });
});

test('pr-create pushes over HTTPS with the server’s token: refused on the certificate without CODEHOST_CA_FILE, pushed and opened with it', async () => {
  const remote = git.repo(PATH, g.root);
  const sh = (cwd: string, ...a: string[]) => execFileSync('git', a, { cwd, encoding: 'utf8', env: { ...process.env, GIT_AUTHOR_NAME: 't', GIT_AUTHOR_EMAIL: 't@example.com', GIT_COMMITTER_NAME: 't', GIT_COMMITTER_EMAIL: 't@example.com' } }).trim();
  sh(g.root, 'remote', 'add', 'origin', git.url(PATH));
  const wt = join(g.root, '..', '.wt-app-a');
  sh(g.root, 'worktree', 'add', '-q', '-b', 'svc/a/issue-4', wt);
  sh(wt, 'commit', '-q', '--allow-empty', '-m', 'the fix');
  const sha = sh(wt, 'rev-parse', 'HEAD');
  const create = () => runCli(g.sb, ['pr-create', '--title', 'Fix it', '--body', 'Closes #4', '--project-root', wt]);

  // Without the CA: the daemon holds the server's token once the watch list came, and git refuses the certificate.
  startDaemon(g.sb);
  let refused = { status: 0 as number | null, stdout: '', stderr: '' };
  await waitUntil(async () => /certificate/i.test((refused = await create()).stderr), 30_000, () => `a certificate error\n${refused.stderr}`);
  assert.is(refused.status, 1);
  assert.match(refused.stderr, /git push failed: .*(SSL certificate problem|server certificate verification failed).*\[not_opened\]/s);
  assert.not.ok(refused.stderr.includes(gl.token), 'the token is in no message');
  assert.is(remote.branch('svc/a/issue-4'), null);
  assert.is(gl.project(PATH).mrs.length, 0);

  // With CODEHOST_CA_FILE in the runner's environment (the bundle as git's http.sslCAInfo for that push).
  await killDaemons();
  startDaemon(g.sb, { CODEHOST_CA_FILE: ca });
  let opened = { status: 0 as number | null, stdout: '', stderr: '' };
  await waitUntil(async () => (opened = await create()).status === 0, 30_000, () => `the merge request opened\n${opened.stderr}`);
  assert.is(remote.branch('svc/a/issue-4'), sha, 'the branch arrived over HTTPS');
  const mr = gl.project(PATH).mrs.find((m) => m.source === 'svc/a/issue-4')!;
  assert.equal(JSON.parse(opened.stdout), { pr: mr.iid, url: `${gl.url}/${PATH}/-/merge_requests/${mr.iid}`, branch: 'svc/a/issue-4' });
  const pushes = git.requests.filter((r) => r.path.endsWith('git-receive-pack'));
  assert.ok(pushes.length > 0, 'git pushed over smart HTTP');
  for (const r of git.requests.filter((x) => x.status !== 0)) assert.equal([r.user, r.token, r.status === 401], ['oauth2', gl.token, false], `${r.method} ${r.path}`);
  assert.equal(gl.unexpected, []);
});

test.run();

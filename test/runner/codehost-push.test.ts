// git push of a skill run's branch in App mode (docs/runner.md, "Code host"; docs/github-app.md, "App
// mode on the runners"): the token the server sent for the repository is preferred over the runner's
// own, and reaches git only as an `http.extraHeader` (Authorization: Basic base64(x-access-token:TOKEN))
// in GIT_CONFIG_* variables of that one git command — never on its command line, never in the remote
// URL — and a failed push's error text does not hold it. git here is a stand-in on PATH that records
// its argv and GIT_CONFIG_* environment (the file:// remote of test/fakes/git-remote.ts cannot check
// HTTP credentials); the pull request is opened on the fake GitHub with the same token.
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { GitHubClient } from '../../runner/codehost/client.ts';
import { openRunPull } from '../../runner/codehost/publish.ts';
import { githubAdapter } from '../../runner/codehost/github-adapter.ts';
import { Tokens } from '../../runner/codehost/token.ts';
import type { Profile } from '../../runner/config.ts';
import { GitHubClient as Client } from '../../runner/codehost/client.ts';
import { gitlabAdapter } from '../../runner/codehost/gitlab.ts';
import { githubFake } from '../fakes/github.ts';
import { gitlabFake } from '../fakes/gitlab.ts';
import type { GitHubFake } from '../fakes/github.ts';

const REPO = 'acme/app';
const OWN = 'ghp_runners_own_token_that_the_fake_refuses_0000';
let fake: GitHubFake;
let dir: string;

const GIT = `#!/bin/sh
printf '%s\\n' "$*" >> "$REC/argv"
env | grep '^GIT_CONFIG' >> "$REC/env"
case "$*" in
  *"remote get-url origin"*) echo "$REMOTE_URL" ;;
  *" push "*) if [ -n "$FAIL_PUSH" ]; then echo "fatal: unable to access '$REMOTE_URL': The requested URL returned error: 403 ($GIT_CONFIG_VALUE_0)" >&2; exit 128; fi ;;
esac
exit 0
`;

test.before.each(async () => {
  fake = await githubFake();
  fake.repo(REPO);
  dir = mkdtempSync(join(tmpdir(), 'svc-push-'));
  mkdirSync(join(dir, 'bin'));
  writeFileSync(join(dir, 'bin', 'git'), GIT);
  chmodSync(join(dir, 'bin', 'git'), 0o755);
});
test.after.each(async () => {
  await fake.close();
  rmSync(dir, { recursive: true, force: true });
});

function setup(extraEnv: Record<string, string> = {}) {
  const host = new URL(fake.url).hostname;
  const profile: Profile = {
    id: 'cc',
    runtime: 'claude',
    args: [],
    env: { GH_TOKEN: OWN, PATH: `${join(dir, 'bin')}:/usr/bin:/bin`, REC: dir, REMOTE_URL: `https://${host}/${REPO}.git`, ...extraEnv },
  } as Profile;
  const tokens = new Tokens({}, fake.url, () => [profile]);
  const client = new GitHubClient({ apiUrl: fake.url, token: (repo) => tokens.forRepo(repo) });
  const input = { root: dir, repo: REPO, branch: 'svc/run-r1', runId: 'r1', skill: 'fix', profile, report: '# Fix the parser\nDone.' };
  return { tokens, client, input };
}

const header = (token: string) => `Authorization: Basic ${Buffer.from(`x-access-token:${token}`).toString('base64')}`;

test("the server's token for the repository pushes through http.extraHeader in the environment, and opens the pull request", async () => {
  const { tokens, client, input } = setup();
  tokens.setServer([{ repo: REPO, token: fake.token, expiresAt: new Date(Date.now() + 3_600_000).toISOString() }], true);
  const link = await openRunPull(githubAdapter(client, fake.url), tokens, input);
  assert.equal(link.openError, undefined, link.openError);
  assert.ok(link.number);
  const argv = readFileSync(join(dir, 'argv'), 'utf8');
  assert.match(argv, /push --porcelain origin refs\/heads\/svc\/run-r1:refs\/heads\/svc\/run-r1/);
  assert.not.ok(argv.includes(fake.token) || argv.includes(Buffer.from(`x-access-token:${fake.token}`).toString('base64')), 'no token on the command line');
  assert.not.ok(argv.includes('extraHeader'), 'not as -c on the command line');
  const env = readFileSync(join(dir, 'env'), 'utf8');
  assert.match(env, /GIT_CONFIG_KEY_0=http\.extraHeader/);
  assert.ok(env.includes(`GIT_CONFIG_VALUE_0=${header(fake.token)}`), env);
  assert.not.ok(env.includes(OWN), "the runner's own token is not used");
  const post = fake.requests.find((r) => r.method === 'POST' && r.path === `/repos/${REPO}/pulls`)!;
  assert.is(post.token, fake.token, 'the pull request with the same token');
});

test("without a usable server token (expired) the runner's own token is used", async () => {
  const { tokens, client, input } = setup();
  tokens.setServer([{ repo: REPO, token: fake.token, expiresAt: new Date(Date.now() + 10_000).toISOString() }], true);
  const link = await openRunPull(githubAdapter(client, fake.url), tokens, input);
  assert.ok(readFileSync(join(dir, 'env'), 'utf8').includes(`GIT_CONFIG_VALUE_0=${header(OWN)}`));
  assert.match(link.openError ?? '', /HTTP 401/, 'the fake refuses the own token');
});

test("a refused push's error text holds neither the token nor its header", async () => {
  const { tokens, client, input } = setup({ FAIL_PUSH: '1' });
  tokens.setServer([{ repo: REPO, token: fake.token, expiresAt: new Date(Date.now() + 3_600_000).toISOString() }], true);
  const link = await openRunPull(githubAdapter(client, fake.url), tokens, input);
  assert.match(link.openError ?? '', /^git push was refused: .*403/);
  assert.match(link.openError!, /\[redacted\]/, 'what git said is there, the secret replaced');
  assert.not.ok(link.openError!.includes(fake.token));
  assert.not.ok(link.openError!.includes(Buffer.from(`x-access-token:${fake.token}`).toString('base64')));
});

test('GitLab: the token for that command pushes as oauth2:TOKEN through http.extraHeader (no glab), and the merge request targets the default branch', async () => {
  const gl = await gitlabFake({ prefix: '/gitlab' });
  try {
    const path = 'acme/platform/app';
    gl.project(path).defaultBranch = 'trunk';
    const host = new URL(gl.url).hostname;
    const profile = { id: 'cc', runtime: 'claude', args: [], env: { PATH: `${join(dir, 'bin')}:/usr/bin:/bin`, REC: dir, REMOTE_URL: `https://${host}/gitlab/${path}.git` } } as unknown as Profile;
    const tokens = new Tokens({}, gl.url, () => [profile], 'gitlab');
    tokens.setServer([{ kind: 'gitlab', repo: path, token: gl.token, expiresAt: new Date(Date.now() + 3_600_000).toISOString() }], true);
    const client = new Client({ kind: 'gitlab', apiUrl: `${gl.url}/api/v4`, token: (p) => tokens.forRepo(p) });
    const input = { root: dir, repo: path, branch: 'svc/run-r2', runId: 'r2', skill: 'fix', profile, report: '# Fix it\nDone.' };
    const link = await openRunPull(gitlabAdapter(client, gl.url), tokens, input);
    assert.equal(link, { url: `${gl.url}/${path}/-/merge_requests/1`, number: 1 });
    const env = readFileSync(join(dir, 'env'), 'utf8');
    assert.ok(env.includes(`GIT_CONFIG_VALUE_0=Authorization: Basic ${Buffer.from(`oauth2:${gl.token}`).toString('base64')}`), env);
    assert.not.ok(readFileSync(join(dir, 'argv'), 'utf8').includes(gl.token));
    const post = gl.requests.find((r) => r.method === 'POST')!;
    assert.equal([post.body.source_branch, post.body.target_branch, post.body.title], ['svc/run-r2', 'trunk', 'Fix it']);
    assert.match(post.body.description, /svc skill run `r2`/);
    const again = await openRunPull(gitlabAdapter(client, gl.url), tokens, input);
    assert.equal(again, link, 'the open merge request from that branch is found, not opened twice');
  } finally {
    await gl.close();
  }
});

test.run();

// The runner's code-host tokens in App mode (docs/runner.md, "Code host"): the server's token for a
// repository is used for that repository only and before the runner's own; one with 30 s or less left is
// not; one GitHub refuses (401: the installation was removed) is dropped and the request goes once more
// with the runner's own; a watch list's set replaces the earlier one. And the own token's login for the
// Projects page (`GET /user`, asked once per token). Against the fake GitHub (test/fakes/github.ts),
// which accepts its personal token and refuses others.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { GitHubClient } from '../../runner/codehost/client.ts';
import { openIssues } from '../../runner/codehost/github.ts';
import { CodeHost } from '../../runner/codehost/poller.ts';
import { Tokens } from '../../runner/codehost/token.ts';
import { configSchema } from '../../runner/config.ts';
import { githubFake } from '../fakes/github.ts';
import type { GitHubFake } from '../fakes/github.ts';

const OWN = 'ghp_the_runners_own_token_0000000000000';
const inMs = (ms: number) => new Date(Date.now() + ms).toISOString();
let fake: GitHubFake;
test.before.each(async () => {
  fake = await githubFake();
  fake.repo('acme/app');
  fake.repo('acme/other');
});
test.after.each(() => fake.close());

function setup(own: string) {
  const tokens = new Tokens({ GH_TOKEN: own }, fake.url, () => []);
  const client = new GitHubClient({ apiUrl: fake.url, token: (repo) => tokens.forRepo(repo), onUnauthorized: (repo, t) => tokens.refused(repo, t) });
  return { tokens, client };
}
const tokenOf = (repo: string) => fake.requests.filter((r) => r.path.startsWith(`/repos/${repo}/`)).at(-1)?.token;

test("the server's token is used for its repository only, and not with 30 s or less left", async () => {
  const { tokens, client } = setup(OWN);
  tokens.setServer([{ repo: 'Acme/App', token: fake.token, expiresAt: inMs(3_600_000) }], true);
  await openIssues(client, 'acme/app');
  assert.is(tokenOf('acme/app'), fake.token, 'the server token, the name matched case-insensitively');
  await openIssues(client, 'acme/other').catch(() => {});
  assert.is(tokenOf('acme/other'), OWN, 'another repository: the own token');
  assert.equal(tokens.serverRepos().map((r) => r.repo), ['acme/app']);
  tokens.setServer([{ repo: 'acme/app', token: fake.token, expiresAt: inMs(30_000) }], true);
  assert.is(tokens.serverToken('acme/app'), null, 'too close to its expiry');
  assert.is(await tokens.forRepo('acme/app'), OWN);
  tokens.setServer([], true);
  assert.equal(tokens.serverRepos(), [], 'a watch list without it drops it');
});

test("a server token GitHub refuses is dropped and the request goes once more with the runner's own", async () => {
  const { tokens, client } = setup(fake.token);
  const revoked = 'ghs_revoked_installation_token_00000000';
  tokens.setServer([{ repo: 'acme/app', token: revoked, expiresAt: inMs(3_600_000) }], false);
  const r = await openIssues(client, 'acme/app');
  assert.equal(r.items, []);
  const sent = fake.requests.filter((x) => x.path.startsWith('/repos/acme/app/issues'));
  assert.equal(sent.map((x) => [x.token, x.status]), [[revoked, 401], [fake.token, 200]]);
  assert.is(tokens.serverToken('acme/app'), null, 'dropped');
});

test("the own token's login is asked once per token (GET /user) and is null when GitHub does not say", async () => {
  const dir = mkdtempSync(join(tmpdir(), 'svc-login-'));
  try {
    const seen: string[] = [];
    const fetchStub = (async (url: string | URL, init?: RequestInit) => {
      seen.push(`${new URL(String(url)).pathname} ${(init?.headers as Record<string, string>).authorization}`);
      return new Response(JSON.stringify({ login: 'alice' }), { status: 200, headers: { 'content-type': 'application/json' } });
    }) as typeof fetch;
    const config = configSchema.parse({ codehost: { apiUrl: 'https://ghe.example/api/v3' }, profiles: [] });
    const env = { GH_TOKEN: OWN, XDG_STATE_HOME: dir, HOME: dir };
    const host = new CodeHost({ config, env, projects: () => [], append: () => {}, fetch: fetchStub });
    assert.is(await host.login(), 'alice');
    assert.is(await host.login(), 'alice');
    assert.equal(seen, [`/api/v3/user Bearer ${OWN}`], 'asked once');
    assert.is(host.describe().tokenName, 'GH_TOKEN');
    assert.is(host.describe().tokenSource, 'environment');
    const none = new CodeHost({ config, env: { XDG_STATE_HOME: dir, HOME: dir, PATH: '/nonexistent' }, projects: () => [], append: () => {}, fetch: fetchStub });
    assert.is(await none.login(), null, 'no token, no login');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test.run();

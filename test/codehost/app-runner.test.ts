// App mode on the runners (docs/github-app.md, "App mode on the runners"; issue #36 item 1, runner half):
// the real server, the real runner bundle and the fake GitHub with a registered App installed on one
// repository (acme/app) and not on another (acme/other), both projects on one runner whose own token is
// the fake's personal token.
//   - the runner's polls and its issue.create / pr.inspect / pr.describe / issues.refresh on acme/app carry the App's
//     installation token (issues appear as the App's), on acme/other its own token;
//   - tokens that near their expiry are replaced on the runner (the watch list is sent again) and the
//     polls go on with the new one;
//   - the Projects page's answer says "App installed on acme/app" and "runner token: GH_TOKEN …";
//   - no minted token is in a runner_commands row, an audit record, the runner's config or state files,
//     or the server's and the runner's logs.
// needs: git
import { execFileSync } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { openPglite } from '../../functions/lib/db/pglite.ts';
import { openPostgres } from '../../functions/lib/db/postgres.ts';
import { sql } from '../../functions/lib/db/port.ts';
import { githubFake } from '../fakes/github.ts';
import { assertMatchesGitHub } from '../fakes/openapi-check.ts';
import type { GitHubFake } from '../fakes/github.ts';
import { serverDbEnv } from '../helpers/db.ts';
import { startServer } from '../helpers/server.ts';
import type { RunningServer } from '../helpers/server.ts';
import { killDaemons, runCli, sandbox, startDaemon, waitUntil } from '../runner/_harness.ts';
import type { Daemon, Sandbox } from '../runner/_harness.ts';

const KEY = Buffer.alloc(32, 7).toString('base64');
/** A token this close to the shared cache's 5-minute threshold is replaced 10 s after it was minted. */
const TTL_S = 310;

let fake: GitHubFake;
let dbEnv: { env: Record<string, string>; cleanup: () => Promise<void> };
let server: RunningServer;
let sb: Sandbox;
let daemon: Daemon;
let runnerId: string;
let installationId: number;
const projects: Record<string, string> = {};

const appTokens = () => fake.app.minted.map((m) => m.token);
const isAppToken = (t: string | null) => Boolean(t && appTokens().includes(t));
/** Answered (200, or 304 for a conditional request the runner's ETag cache made). */
const good = (r: { status: number }) => r.status === 200 || r.status === 304;
const requestsTo = (repo: string, method = 'GET', path = '') => fake.requests.filter((r) => r.method === method && r.path.startsWith(`/repos/${repo}${path}`) && r.status > 0);

function gitRepo(dir: string): string {
  mkdirSync(dir, { recursive: true });
  execFileSync('git', ['init', '-q', '-b', 'main', dir]);
  return dir;
}

async function command(projectId: string, name: string, args: Record<string, unknown> = {}) {
  const res = await server.api(`/api/projects/${projectId}/commands`, { method: 'POST', json: { name, args } });
  return { status: res.status, body: await res.json() };
}

test.before(async () => {
  fake = await githubFake();
  fake.app.tokenTtlSeconds = TTL_S;
  fake.repo('acme/app');
  fake.repo('acme/other');
  dbEnv = await serverDbEnv();
  server = await startServer({ admin: true, dbEnv: dbEnv.env, env: { APP_ENCRYPTION_KEY: KEY } });
  assert.is((await server.api('/api/webhooks/allowlist', { method: 'PUT', json: { allowlist: '127.0.0.1' } })).status, 200);
  const gh = fake.app.addApp();
  installationId = fake.app.install(gh.id, 'acme', ['acme/app']).id;
  const app = await server.api('/api/github-apps', { method: 'POST', json: { name: 'svc bot', githubAppId: gh.id, privateKey: gh.pem, apiUrl: fake.url } });
  assert.is(app.status, 201, await app.clone().text());

  sb = sandbox();
  const made = await (await server.api('/api/runners', { method: 'POST', json: { name: 'apptoken' } })).json();
  runnerId = made.runner.id;
  const paired = await runCli(sb, ['pair', '--server', server.url, '--code', made.code, '--no-detect']);
  assert.is(paired.status, 0, paired.stderr);
  sb.writeConfig({ ...sb.readConfig(), profiles: [{ id: 'cc', runtime: 'claude', env: { GH_TOKEN: fake.token }, args: [] }], codehost: { apiUrl: fake.url } });
  for (const [name, repo] of [['app', 'acme/app'], ['other', 'acme/other']]) {
    const res = await server.api('/api/projects', { method: 'POST', json: { name, repo, runnerId, rootPath: gitRepo(join(sb.dir, 'work', name)) } });
    assert.is(res.status, 201, await res.clone().text());
    const body = await res.json();
    projects[name] = body.id ?? body.project?.id;
  }
  daemon = startDaemon(sb, { SVC_PR_POLL_MS: '300', SVC_QUEUE_POLL_MS: '300' });
});
test.after(async () => {
  await killDaemons();
  await server?.cleanup();
  await dbEnv?.cleanup();
  sb?.cleanup();
  await fake?.close();
});

test("the runner's polls of acme/app carry the App's installation token; those of acme/other its own token", async () => {
  await waitUntil(() => requestsTo('acme/app', 'GET', '/issues').some((r) => isAppToken(r.token) && good(r)), 30_000, () => `an App-token poll of acme/app\n${JSON.stringify(fake.requests.slice(-8).map((r) => [r.method, r.path, r.status, isAppToken(r.token) ? 'app' : r.token === fake.token ? 'own' : r.token?.slice(0, 12)]))}\n${server.output().split('\n').filter((l) => /github|token|warn|error/i.test(l)).slice(-10).join('\n')}`);
  await waitUntil(() => requestsTo('acme/other', 'GET', '/issues').some((r) => r.token === fake.token && good(r)), 30_000, () => `a poll of acme/other\n${daemon.output()}`);
  const minted = fake.app.minted.at(-1)!;
  assert.equal(minted.repositories, ['acme/app'], 'scoped to acme/app alone');
  // (GET /repos/acme/other/installation is the server asking as the App whether it is installed there.)
  assert.ok(requestsTo('acme/other').filter((r) => !r.path.endsWith('/installation')).every((r) => r.token === fake.token), "acme/other never gets the App's token");
  await waitUntil(async () => /codehost: ok \(.*the App's for acme\/app/.test((await runCli(sb, ['status'])).stdout), 15_000, 'svc-runner status naming the App token');
});

test("issue.create, issues.refresh and pr.inspect on acme/app go out with the App's token; issue.create on acme/other with the runner's", async () => {
  const pull = fake.addPull('acme/app', { title: 'Fix', head: 'svc/fix' });
  const created = await command(projects.app, 'issue.create', { title: 'Filed as the App', body: 'from svc' });
  assert.is(created.status, 200, JSON.stringify(created.body));
  const post = requestsTo('acme/app', 'POST', '/issues').at(-1)!;
  assert.ok(isAppToken(post.token), 'the issue was created with the installation token');
  assert.is(post.status, 201);
  assert.is(post.body.title, 'Filed as the App');

  const refreshed = await command(projects.app, 'issues.refresh');
  assert.is(refreshed.status, 200, JSON.stringify(refreshed.body));
  const inspected = await command(projects.app, 'pr.inspect', { number: pull.number });
  assert.is(inspected.status, 200, JSON.stringify(inspected.body));
  assert.is(inspected.body.data.number, pull.number);
  assert.ok(requestsTo('acme/app', 'GET', `/pulls/${pull.number}`).every((r) => isAppToken(r.token)), 'pr.inspect read with the App token');
  // pr.describe (the PR's cost block, docs/cost.md) writes the description as the App too.
  const described = await command(projects.app, 'pr.describe', { number: pull.number, block: 'This pull request cost $1.00 over 1 agent session.' });
  assert.is(described.status, 200, JSON.stringify(described.body));
  const patch = requestsTo('acme/app', 'PATCH', `/pulls/${pull.number}`).at(-1)!;
  assert.ok(patch && isAppToken(patch.token), 'pr.describe wrote with the App token');
  assert.match(patch.body.body, /<!-- svc:cost -->\nThis pull request cost \$1\.00 over 1 agent session\.\n<!-- \/svc:cost -->/);

  const other = await command(projects.other, 'issue.create', { title: 'Filed by the runner' });
  assert.is(other.status, 200, JSON.stringify(other.body));
  assert.is(requestsTo('acme/other', 'POST', '/issues').at(-1)!.token, fake.token);
});

test('a token near its expiry is replaced on the runner, which goes on polling with the new one', async () => {
  const first = fake.app.minted.filter((m) => m.repositories.includes('acme/app')).length;
  await waitUntil(() => fake.app.minted.filter((m) => m.repositories.includes('acme/app')).length > first, 40_000, 'a new token minted');
  const fresh = fake.app.minted.at(-1)!.token;
  await waitUntil(() => requestsTo('acme/app', 'GET', '/issues').some((r) => r.token === fresh && good(r)), 30_000, () => `a poll with the new token\n${daemon.output()}`);
  const since = fake.requests.length;
  await waitUntil(() => fake.requests.slice(since).filter((r) => r.path.startsWith('/repos/acme/app/') && good(r)).length >= 3, 30_000, 'polls go on');
  assert.ok(fake.requests.slice(since).filter((r) => r.path.startsWith('/repos/acme/app/')).every((r) => r.status !== 401), 'no request with a stale token');
});

test('the Projects answer: App mode on acme/app, the runner token on acme/other with the reason', async () => {
  const app = await (await server.api(`/api/projects/${projects.app}/codehost-mode`)).json();
  assert.is(app.mode, 'app', JSON.stringify(app));
  assert.match(app.reason, /^App installed on acme\/app \(App svc bot, installation \d+\)$/);
  assert.is(app.warning, null);
  assert.not.ok(JSON.stringify(app).includes(fake.app.minted.at(-1)!.token));
  const other = await (await server.api(`/api/projects/${projects.other}/codehost-mode`)).json();
  assert.is(other.mode, 'runner', JSON.stringify(other));
  assert.match(other.reason, /^runner token: GH_TOKEN of a runtime profile/);
  // The login the runner asked GitHub for its own token (GET /user), end to end.
  assert.match(other.reason, /as @alice/);
  assert.match(other.reason, /not installed on acme\/other/);
  assert.is(other.appError.code, 'not_installed');
  assert.is(other.runner.tokenName, 'GH_TOKEN');
});

test("the App's installation removed: the runner drops the refused token and polls with its own; the Projects answer says why", async () => {
  fake.app.revoke(installationId);
  const since = fake.requests.length;
  await waitUntil(() => fake.requests.slice(since).some((r) => r.path.startsWith('/repos/acme/app/issues') && r.token === fake.token && good(r)), 40_000, () => `a poll of acme/app with the runner's token\n${daemon.output()}`);
  const mode = await (await server.api(`/api/projects/${projects.app}/codehost-mode`)).json();
  assert.is(mode.mode, 'runner', JSON.stringify(mode));
  assert.match(mode.reason, /^runner token: GH_TOKEN/);
  assert.match(mode.appError.message, /not installed on acme\/app/);
});

/** Regular files only: the running daemon's local socket (state/svc/local/runner.sock) cannot be read. */
function filesUnder(dir: string): string[] {
  return readdirSync(dir).flatMap((n) => {
    const p = join(dir, n);
    const s = statSync(p);
    return s.isDirectory() ? filesUnder(p) : s.isFile() ? [p] : [];
  });
}

test("no minted token in runner_commands, the audit log, the runner's files, or either log", async () => {
  const tokens = appTokens();
  assert.ok(tokens.length >= 2);
  const leaks = (text: string) => tokens.filter((t) => text.includes(t) || text.includes(Buffer.from(`x-access-token:${t}`).toString('base64')));
  const stateFiles = filesUnder(sb.dir).filter((p) => !p.includes(`${join(sb.dir, 'work')}/`));
  assert.ok(stateFiles.some((p) => p.endsWith('codehost.json')), 'the code-host state file is among them');
  for (const p of stateFiles) assert.equal(leaks(readFileSync(p, 'latin1')), [], p);
  assert.equal(leaks(daemon.output()), [], 'the runner log');
  await daemon.kill();
  await server.stop('SIGTERM');
  assert.equal(leaks(server.output()), [], 'the server log');
  const db = dbEnv.env.DATABASE_URL ? await openPostgres(dbEnv.env.DATABASE_URL, 1) : await openPglite(dbEnv.env.PGLITE_DATA_DIR);
  try {
    const rows = await db.query<{ name: string; args: unknown; result: unknown }>(sql`select name, args, result from runner_commands`);
    assert.ok(rows.some((r) => r.name === 'issue.create'), 'the commands were recorded');
    assert.equal(leaks(JSON.stringify(rows)), [], 'runner_commands');
    const audit = await db.query(sql`select * from audit_records`);
    assert.equal(leaks(JSON.stringify(audit)), [], 'audit_records');
  } finally {
    await db.close();
  }
});

test("every request svc made to the fake GitHub and every answer it gave match GitHub's OpenAPI description", () => assertMatchesGitHub());

test.run();

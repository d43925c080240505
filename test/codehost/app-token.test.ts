// GitHub App mode, server half (docs/github-app.md, "App mode"), against the real server and the fake
// GitHub's App endpoints (test/fakes/github-app.ts, which verifies the JWT as GitHub does): the check
// endpoint's answers, installation tokens minted once and cached, refreshed within 5 minutes of expiry,
// a key that does not match the App, an App not installed on the repository, a revoked and a suspended
// installation, clock skew, and the address guard refusing a private apiUrl. The token is never in an
// answer, a log line or an audit record.
import { decodeJwt } from 'jose';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { githubFake } from '../fakes/github.ts';
import { assertMatchesGitHub } from '../fakes/openapi-check.ts';
import type { GitHubFake } from '../fakes/github.ts';
import { startServer } from '../helpers/server.ts';
import type { RunningServer } from '../helpers/server.ts';
import { callAs, makeUser } from '../helpers/users.ts';

const KEY = Buffer.alloc(32, 9).toString('base64');
let server: RunningServer;
let fake: GitHubFake;
const call = (s: RunningServer, path: string, init: { method?: string; json?: unknown; token?: string } = {}) => callAs(s, path, init);

/** A GitHub App on the fake, installed on `repos`, registered in svc with its key: svc's app id and GitHub's. */
async function registered(s: RunningServer, repos: string[], opts: { pem?: string; apiUrl?: string } = {}) {
  const gh = fake.app.addApp();
  const installation = fake.app.install(gh.id, repos[0]?.split('/')[0] ?? 'acme', repos);
  for (const r of repos) fake.repo(r);
  const made = await call(s, '/api/github-apps', { method: 'POST', json: { name: `app ${gh.id}`, githubAppId: gh.id, privateKey: opts.pem ?? gh.pem, apiUrl: opts.apiUrl ?? fake.url } });
  assert.is(made.status, 201, JSON.stringify(made.body));
  return { id: made.body.app.id as string, gh, installation };
}
const check = (s: RunningServer, id: string, repo?: string) => call(s, `/api/github-apps/${id}/check${repo ? `?repo=${encodeURIComponent(repo)}` : ''}`);
const mints = () => fake.app.minted.length;

test.before(async () => {
  fake = await githubFake();
  server = await startServer({ admin: true, env: { APP_ENCRYPTION_KEY: KEY } });
  const allow = await call(server, '/api/webhooks/allowlist', { method: 'PUT', json: { allowlist: '127.0.0.1' } });
  assert.is(allow.status, 200, JSON.stringify(allow.body));
});
test.after(async () => {
  await server?.cleanup();
  await fake?.close();
});

test('check: the key works → ok with the installations; the JWT is RS256 from the App, iat 60 s ago, exp − iat = 600 s', async () => {
  const app = await registered(server, ['acme/app']);
  const res = await check(server, app.id);
  assert.is(res.status, 200, JSON.stringify(res.body));
  assert.equal(res.body, { ok: true, installations: [{ id: app.installation.id, account: 'acme' }] });
  const listed = fake.requests.filter((r) => r.path.startsWith('/app/installations')).at(-1)!;
  const claims = decodeJwt(listed.token!);
  assert.is(claims.iss, String(app.gh.id));
  assert.is(claims.exp! - claims.iat!, 600);
  assert.ok(Math.abs(claims.iat! - (Math.floor(Date.now() / 1000) - 60)) <= 5, `iat ${claims.iat}`);
  // The app's view shows its apiUrl; an instance admin only may check.
  assert.is((await call(server, `/api/github-apps/${app.id}`)).body.apiUrl, fake.url);
  const user = await makeUser(server, 'notadmin');
  assert.is((await call(server, `/api/github-apps/${app.id}/check`, { token: user.token })).status, 403);
  assert.is((await check(server, 'no-such-app')).status, 404);
});

test('a repository token is minted once and cached: the second ask mints nothing; it works on the repository; it is in no answer, log or audit record', async () => {
  const app = await registered(server, ['acme/cached']);
  const before = mints();
  const first = await check(server, app.id, 'acme/cached');
  assert.is(first.status, 200);
  assert.is(first.body.ok, true, JSON.stringify(first.body));
  assert.equal([first.body.repository.repo, first.body.repository.installationId, first.body.repository.minted], ['acme/cached', app.installation.id, true]);
  assert.is(mints(), before + 1);
  const minted = fake.app.minted.at(-1)!;
  assert.equal(minted.repositories, ['acme/cached'], 'scoped to that one repository');
  assert.is(first.body.repository.tokenExpiresAt, new Date(Math.floor(minted.expiresAt / 1000) * 1000).toISOString());
  const second = await check(server, app.id, 'ACME/Cached');
  assert.equal([second.body.ok, second.body.repository.minted], [true, false]);
  assert.is(mints(), before + 1, 'the second ask mints nothing');
  const used = fake.requests.filter((r) => r.path === '/repos/acme/cached' || r.path === '/repos/ACME/Cached');
  assert.ok(used.length === 2 && used.every((r) => r.token === minted.token && r.status === 200), 'the token was tried on the repository');
  const audit = await call(server, '/api/audit?limit=200');
  for (const text of [JSON.stringify(first.body), JSON.stringify(second.body), JSON.stringify(audit.body), server.output()]) assert.not.ok(text.includes(minted.token), 'the token is never shown or logged');
});

test('refreshed when within 5 minutes of expiry; the fake refuses a token once it expired', async () => {
  const app = await registered(server, ['acme/short']);
  const before = mints();
  fake.app.tokenTtlSeconds = 240; // less than 5 minutes left from the start: never reused
  try {
    assert.is((await check(server, app.id, 'acme/short')).body.repository.minted, true);
    assert.is((await check(server, app.id, 'acme/short')).body.repository.minted, true);
    assert.is(mints(), before + 2);
    fake.app.tokenTtlSeconds = 3600;
    assert.is((await check(server, app.id, 'acme/short')).body.repository.minted, true);
    assert.is((await check(server, app.id, 'acme/short')).body.repository.minted, false);
    assert.is(mints(), before + 3);
    fake.app.tokenTtlSeconds = 1;
    const other = await registered(server, ['acme/brief']);
    assert.is((await check(server, other.id, 'acme/brief')).body.ok, true);
    const token = fake.app.minted.at(-1)!.token;
    await new Promise((r) => setTimeout(r, 1100));
    const late = await fetch(`${fake.url}/repos/acme/brief`, { headers: { authorization: `Bearer ${token}` } });
    assert.equal([late.status, (await late.json()).message], [401, 'Bad credentials']);
  } finally {
    fake.app.tokenTtlSeconds = 3600;
  }
});

test('a key that does not match the App: ok false with GitHub own 401 message', async () => {
  const stranger = fake.app.addApp();
  const app = await registered(server, ['acme/keyed'], { pem: stranger.pem });
  const res = await check(server, app.id);
  assert.is(res.status, 200);
  assert.is(res.body.ok, false);
  assert.equal(res.body.installations, []);
  assert.equal([res.body.error.code, res.body.error.status], ['github_unauthorized', 401]);
  assert.match(res.body.error.message, /listing the App's installations \(401\): A JSON web token could not be decoded/);
  const repo = await check(server, app.id, 'acme/keyed');
  assert.equal([repo.body.ok, repo.body.error.status, repo.body.repository], [false, 401, undefined]);
});

test('an App not installed on the repository: a clear error naming it; the installations are still listed', async () => {
  const app = await registered(server, ['acme/here']);
  fake.repo('acme/elsewhere');
  const before = mints();
  const res = await check(server, app.id, 'acme/elsewhere');
  assert.is(res.body.ok, false);
  assert.equal(res.body.installations, [{ id: app.installation.id, account: 'acme' }]);
  assert.equal([res.body.error.code, res.body.error.status], ['not_installed', 404]);
  assert.match(res.body.error.message, /The GitHub App is not installed on acme\/elsewhere/);
  assert.is(mints(), before);
});

test('a revoked installation: the cached token is refused, dropped, and the new mint says the App is not installed; a suspended one says so', async () => {
  const app = await registered(server, ['acme/revoked']);
  assert.is((await check(server, app.id, 'acme/revoked')).body.ok, true);
  const token = fake.app.minted.at(-1)!.token;
  fake.app.revoke(app.installation.id);
  const res = await check(server, app.id, 'acme/revoked');
  assert.equal([res.body.ok, res.body.installations, res.body.error.code], [false, [], 'not_installed'], JSON.stringify(res.body));
  assert.match(res.body.error.message, /acme\/revoked/);
  const refused = fake.requests.filter((r) => r.path === '/repos/acme/revoked' && r.token === token).at(-1)!;
  assert.is(refused.status, 401, 'the revoked token was refused by GitHub');

  const paused = await registered(server, ['acme/paused']);
  paused.installation.suspended = true;
  const s = await check(server, paused.id, 'acme/paused');
  assert.equal([s.body.ok, s.body.error.code, s.body.error.status], [false, 'github_forbidden', 403]);
  assert.match(s.body.error.message, /This installation has been suspended/);
});

test('the address guard: a private apiUrl not on the allowlist is refused before any request; bad apiUrls are 400', async () => {
  const app = await registered(server, ['acme/guarded'], { apiUrl: 'https://10.20.30.40/api/v3/' });
  assert.is((await call(server, `/api/github-apps/${app.id}`)).body.apiUrl, 'https://10.20.30.40/api/v3', 'kept without the trailing slash');
  const sent = fake.requests.length;
  const res = await check(server, app.id, 'acme/guarded');
  assert.equal([res.body.ok, res.body.error.code], [false, 'blocked_address']);
  assert.match(res.body.error.message, /10\.20\.30\.40/);
  const local = await call(server, `/api/github-apps/${app.id}`, { method: 'PATCH', json: { apiUrl: fake.url.replace('127.0.0.1', 'localhost') } });
  assert.is(local.status, 200);
  assert.equal([(await check(server, app.id)).body.error.code], ['blocked_address']);
  assert.is(fake.requests.length, sent, 'nothing was sent');
  for (const apiUrl of ['ftp://github.example.com', 'https://user:pw@github.example.com', 'not a url']) {
    const bad = await call(server, `/api/github-apps/${app.id}`, { method: 'PATCH', json: { apiUrl } });
    assert.equal([bad.status, Object.keys(bad.body.error.fields)], [400, ['apiUrl']], apiUrl);
  }
  // Back on the allowlisted address, it works.
  assert.is((await call(server, `/api/github-apps/${app.id}`, { method: 'PATCH', json: { apiUrl: fake.url } })).status, 200);
  assert.is((await check(server, app.id, 'acme/guarded')).body.ok, true);
});

test('an App without its key or App ID answers ok false saying what is missing', async () => {
  const made = await call(server, '/api/github-apps', { method: 'POST', json: { name: 'bare' } });
  const res = await check(server, made.body.app.id, 'acme/app');
  assert.equal([res.status, res.body.ok, res.body.error.code], [200, false, 'app_id_missing']);
  await call(server, `/api/github-apps/${made.body.app.id}`, { method: 'PATCH', json: { githubAppId: 99 } });
  assert.is((await check(server, made.body.app.id)).body.error.code, 'private_key_missing');
});

test('clock skew: a server clock an hour ahead signs a JWT GitHub refuses, with its own message', async () => {
  const ahead = await startServer({ admin: true, env: { APP_ENCRYPTION_KEY: KEY, NODE_ENV: 'test', TEST_CLOCK_OFFSET_SECONDS: '3600' } });
  try {
    await call(ahead, '/api/webhooks/allowlist', { method: 'PUT', json: { allowlist: '127.0.0.1' } });
    const app = await registered(ahead, ['acme/skewed']);
    const res = await check(ahead, app.id);
    assert.equal([res.body.ok, res.body.error.status], [false, 401]);
    assert.match(res.body.error.message, /'Issued at' claim \('iat'\)/);
  } finally {
    await ahead.cleanup();
  }
});

test("every request svc made to the fake GitHub and every answer it gave match GitHub's OpenAPI description", () => assertMatchesGitHub());

test.run();

// Two server processes on one PostgreSQL (docs/github-app.md, "App mode"): both ask for the same
// repository's installation token at once; the advisory lock lets one mint while the other waits and
// then reads the token the first stored, so GitHub is asked once. Afterwards either replica reuses it.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { githubFake } from '../fakes/github.ts';
import { assertMatchesGitHub } from '../fakes/openapi-check.ts';
import type { GitHubFake } from '../fakes/github.ts';
import { freshPostgres, onlyOn } from '../helpers/db.ts';
import { startServer } from '../helpers/server.ts';
import type { RunningServer } from '../helpers/server.ts';

onlyOn('postgres', test, 2, () => {
  let pg: Awaited<ReturnType<typeof freshPostgres>>;
  let servers: RunningServer[] = [];
  let fake: GitHubFake;
  test.before(async () => {
    fake = await githubFake();
    pg = await freshPostgres();
    const env = { APP_ENCRYPTION_KEY: Buffer.alloc(32, 5).toString('base64') };
    const a = await startServer({ admin: true, env, dbEnv: { DATABASE_URL: pg.url } });
    servers = [a, await startServer({ env, dbEnv: { DATABASE_URL: pg.url } })];
  });
  test.after(async () => {
    await Promise.all(servers.map((s) => s.cleanup()));
    await pg?.drop();
    await fake?.close();
  });

  test('two replicas asking at once mint once; both answer the same installation and expiry', async () => {
    const [a, b] = servers;
    const asAdmin = (s: RunningServer, path: string, init: RequestInit & { json?: unknown } = {}) =>
      fetch(`${s.url}${path}`, { ...init, headers: { authorization: `Bearer ${a.admin.token}`, ...(init.json === undefined ? {} : { 'content-type': 'application/json' }) }, body: init.json === undefined ? undefined : JSON.stringify(init.json) });
    assert.is((await asAdmin(a, '/api/webhooks/allowlist', { method: 'PUT', json: { allowlist: '127.0.0.1' } })).status, 200);
    const gh = fake.app.addApp();
    const installation = fake.app.install(gh.id, 'acme', ['acme/shared']);
    fake.repo('acme/shared');
    const made = await (await asAdmin(a, '/api/github-apps', { method: 'POST', json: { name: 'replicas', githubAppId: gh.id, privateKey: gh.pem, apiUrl: fake.url } })).json();
    fake.app.mintDelayMs = 400; // the first mint is still in flight when the second replica asks
    const path = `/api/github-apps/${made.app.id}/check?repo=acme/shared`;
    const answers = await Promise.all([a, b].map(async (s) => (await asAdmin(s, path)).json()));
    fake.app.mintDelayMs = 0;
    assert.is(fake.app.minted.length, 1, 'GitHub was asked once');
    assert.equal(answers.map((x) => x.ok), [true, true], JSON.stringify(answers));
    assert.equal(answers.map((x) => x.repository.minted).sort(), [false, true]);
    assert.equal(new Set(answers.map((x) => `${x.repository.installationId} ${x.repository.tokenExpiresAt}`)).size, 1);
    assert.is(answers[0].repository.installationId, installation.id);
    const again = await (await asAdmin(b, path)).json();
    assert.equal([again.ok, again.repository.minted, fake.app.minted.length], [true, false, 1]);
  });

  test("every request svc made to the fake GitHub and every answer it gave match GitHub's OpenAPI description", () => assertMatchesGitHub());
});

test.run();

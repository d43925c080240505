// A project's GitLab code host (issue 42; docs/gitlab.md) against the real server and the fake GitLab:
// PUT stores base URL, project path and token (encrypted), answers the webhook URL and secret token
// (that answer only) and the credential's check; the base URL goes through the outbound address guard
// (loopback refused until allowlisted); a read-only token is refused by the check with the missing
// scopes; GitLab's own error is shown for a wrong token; GET never shows the token or the secret; only
// project admins may do either.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { startServer } from '../helpers/server.ts';
import type { RunningServer } from '../helpers/server.ts';
import { callAs } from '../helpers/users.ts';
import { gitlabFake } from '../fakes/gitlab.ts';
import type { GitLabFake } from '../fakes/gitlab.ts';

const KEY = Buffer.alloc(32, 9).toString('base64');
const PATH = 'acme/platform/app';
let server: RunningServer;
let gl: GitLabFake;
let projectId: string;
const call = (path: string, init: { method?: string; json?: unknown; token?: string } = {}) => callAs(server, path, init);

test.before(async () => {
  server = await startServer({ admin: true, env: { APP_ENCRYPTION_KEY: KEY } });
  gl = await gitlabFake({ prefix: '/gitlab' });
  gl.project(PATH);
  const p = await call('/api/projects', { method: 'POST', json: { name: 'gl', repo: 'acme/app' } });
  assert.is(p.status, 201, JSON.stringify(p.body));
  projectId = p.body.id;
});
test.after(async () => {
  await gl?.close();
  await server?.cleanup();
});

const put = (json: unknown) => call(`/api/projects/${projectId}/codehost`, { method: 'PUT', json });

test('a loopback base URL is refused by the outbound address guard until the allowlist names it', async () => {
  const r = await put({ kind: 'gitlab', baseUrl: gl.url, projectPath: PATH, token: gl.token });
  assert.is(r.status, 400, JSON.stringify(r.body));
  assert.match(JSON.stringify(r.body), /baseUrl/);
  assert.is((await call(`/api/projects/${projectId}/codehost`)).status, 404, 'nothing stored');
  const allow = await call('/api/webhooks/allowlist', { method: 'PUT', json: { allowlist: '127.0.0.1/32' } });
  assert.is(allow.status, 200, JSON.stringify(allow.body));
});

test('PUT with a write token: webhook URL and secret (this answer only), check ok; GET shows neither token nor secret', async () => {
  const r = await put({ kind: 'gitlab', baseUrl: `${gl.url}/`, projectPath: PATH, token: gl.token });
  assert.is(r.status, 200, JSON.stringify(r.body));
  assert.equal([r.body.kind, r.body.baseUrl, r.body.projectPath, r.body.credential, r.body.check.ok], ['gitlab', gl.url, PATH, 'stored', true]);
  assert.match(r.body.webhookUrl, new RegExp(`^${server.url}/hooks/gitlab/[A-Za-z0-9_-]{24}$`));
  assert.match(r.body.webhookSecret, /^[A-Za-z0-9_-]{43}$/);
  assert.ok(gl.requests.some((x) => x.path === '/api/v4/projects/acme%2Fplatform%2Fapp' && x.token === gl.token), 'checked with the token, the path URL-encoded');
  const g = await call(`/api/projects/${projectId}/codehost`);
  assert.is(g.status, 200);
  assert.is(g.body.webhookUrl, r.body.webhookUrl);
  assert.is(g.body.webhookSecret, undefined);
  assert.not.ok(JSON.stringify(g.body).includes(gl.token));
  const mode = await call(`/api/projects/${projectId}/codehost-mode`);
  assert.equal([mode.body.mode, mode.body.warning], ['gitlab', null]);
  assert.match(mode.body.reason, /GitLab token stored on the server for acme\/platform\/app/);
  const audit = await call('/api/audit?action=project.codehost_set');
  assert.not.ok(JSON.stringify(audit.body).includes(gl.token), 'no token in the audit record');
});

test('a read-only token: the check says which scopes are missing; a wrong token: GitLab\'s own error', async () => {
  const ro = 'glpat-read-only-0000000000';
  gl.readOnly.add(ro);
  const r = await put({ kind: 'gitlab', baseUrl: gl.url, projectPath: PATH, token: ro });
  assert.is(r.status, 200);
  assert.equal(r.body.check.ok, false);
  assert.match(r.body.check.error, /lacks the scopes api and write_repository/);
  const w = await put({ kind: 'gitlab', baseUrl: gl.url, projectPath: PATH, token: 'glpat-wrong-00000000' });
  assert.match(w.body.check.error, /HTTP 401.*401 Unauthorized/);
  const mode = await call(`/api/projects/${projectId}/codehost-mode`);
  assert.equal([mode.body.mode, mode.body.repo], ['gitlab', PATH]);
  assert.match(mode.body.warning, /the GitLab token does not work: GitLab answered HTTP 401/, 'the Projects page shows GitLab\'s refusal');
  const none = await put({ kind: 'gitlab', baseUrl: gl.url, projectPath: PATH });
  assert.equal([none.body.credential, none.body.check.ok], ['runner', false]);
  assert.match(none.body.check.error, /GITLAB_TOKEN/);
  const runnerMode = await call(`/api/projects/${projectId}/codehost-mode`);
  assert.equal(runnerMode.body.mode, 'runner');
  assert.match(runnerMode.body.reason, /runner token: GITLAB_TOKEN/);
});

test('bad fields are named', async () => {
  for (const [json, field] of [
    [{ kind: 'gitlab', baseUrl: 'ftp://x', projectPath: PATH }, 'baseUrl'],
    [{ kind: 'gitlab', baseUrl: gl.url, projectPath: 'no-group' }, 'projectPath'],
    [{ kind: 'bitbucket', baseUrl: gl.url, projectPath: PATH }, 'kind'],
  ] as const) {
    const r = await put(json);
    assert.is(r.status, 400);
    assert.match(JSON.stringify(r.body), new RegExp(field));
  }
});

test.run();

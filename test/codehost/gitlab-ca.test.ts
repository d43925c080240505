// CODEHOST_CA_FILE (issue 42; docs/gitlab.md "A self-managed instance with its own CA"): a CA and a
// certificate for 127.0.0.1 made with openssl here, the fake GitLab served over HTTPS with it. Without
// the CA file the server's check fails with the TLS error shown; with it the check is ok — and a webhook
// to an HTTPS receiver with a certificate from the same CA still fails (tls_error): only code-host calls
// trust it. The runner's code-host client (runner/codehost/ca-fetch.ts) the same way: without its
// CODEHOST_CA_FILE a TLS failure, with it the GitLab project is read.
// needs: openssl
import { mkdtempSync, rmSync } from 'node:fs';
import { makeTestCa } from '../fakes/test-ca.ts';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { CodeHost } from '../../runner/codehost/poller.ts';
import { validateConfig } from '../../runner/config.ts';
import { gitlabFake } from '../fakes/gitlab.ts';
import type { GitLabFake } from '../fakes/gitlab.ts';
import { serverDbEnv } from '../helpers/db.ts';
import { startServer } from '../helpers/server.ts';
import { waitUntil } from '../runner/_harness.ts';

const KEY = Buffer.alloc(32, 7).toString('base64');
const PATH = 'infra/own-ca/app';
const dir = mkdtempSync(join(tmpdir(), 'svc-glca-'));
const ca = join(dir, 'ca.pem');
let gl: GitLabFake;
let tls: { key: string; cert: string };

test.before(async () => {
  tls = makeTestCa(dir);
  gl = await gitlabFake({ tls });
  gl.project(PATH);
});
test.after(async () => {
  await gl?.close();
  rmSync(dir, { recursive: true, force: true });
});

async function withServer(env: Record<string, string>, work: (api: (path: string, init?: any) => Promise<Response>) => Promise<void>) {
  const db = await serverDbEnv();
  const server = await startServer({ admin: true, dbEnv: db.env, env: { APP_ENCRYPTION_KEY: KEY, ...env } });
  try {
    assert.is((await server.api('/api/webhooks/allowlist', { method: 'PUT', json: { allowlist: '127.0.0.1' } })).status, 200);
    await work(server.api);
    assert.not.ok(server.output().includes(gl.token), 'the token is in no log');
  } finally {
    await server.cleanup();
    await db.cleanup();
  }
}

async function putCodehost(api: (path: string, init?: any) => Promise<Response>) {
  const made = await api('/api/projects', { method: 'POST', json: { name: `app-${Math.random().toString(36).slice(2, 8)}`, repo: 'acme/app' } });
  assert.is(made.status, 201, await made.clone().text());
  const body = await made.json();
  const id = body.id ?? body.project?.id;
  const put = await api(`/api/projects/${id}/codehost`, { method: 'PUT', json: { kind: 'gitlab', baseUrl: gl.url, projectPath: PATH, token: gl.token } });
  assert.is(put.status, 200, await put.clone().text());
  return (await put.json()).check as { ok: boolean; error?: string; at: string | null };
}

test("the server's GitLab check: without CODEHOST_CA_FILE a TLS error, shown", async () => {
  await withServer({}, async (api) => {
    const check = await putCodehost(api);
    assert.is(check.ok, false);
    assert.match(check.error ?? '', /did not answer \(tls_error: .*(certificate|self[- ]signed|issuer)/i);
  });
});

test('with CODEHOST_CA_FILE the check is ok; a webhook to a receiver with a certificate of the same CA is still refused (tls_error)', async () => {
  const seen: string[] = [];
  const receiver = https.createServer(tls, (req, res) => (seen.push(req.url ?? ''), res.end('ok')));
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
  try {
    await withServer({ CODEHOST_CA_FILE: ca }, async (api) => {
      const check = await putCodehost(api);
      assert.equal([check.ok, check.error], [true, undefined]);
      assert.ok(gl.requests.some((r) => r.path.startsWith('/api/v4/projects/infra%2Fown-ca%2Fapp') && r.token === gl.token));

      const hook = await api('/api/webhooks', { method: 'POST', json: { url: `https://127.0.0.1:${(receiver.address() as AddressInfo).port}/in`, events: ['pr.merged'] } });
      assert.is(hook.status, 201, await hook.clone().text());
      const { id } = await hook.json();
      const sent = await api(`/api/webhooks/${id}/test`, { method: 'POST' });
      assert.is(sent.status, 202, await sent.clone().text());
      const { deliveryId } = await sent.json();
      let attempt: { outcome: string | null; error: string | null } | undefined;
      await waitUntil(async () => {
        const d = await (await api(`/api/webhooks/${id}/deliveries/${deliveryId}`)).json();
        attempt = d.attemptLog?.find((a: { outcome: string | null }) => a.outcome);
        return Boolean(attempt);
      }, 30_000, 'the test delivery attempted');
      assert.is(attempt!.error, 'tls_error');
      assert.equal(seen, [], 'no request reached the receiver');
    });
  } finally {
    receiver.close();
  }
});

test("the runner's code-host client: a TLS failure without its CODEHOST_CA_FILE; with it, the project's issues are read", async () => {
  const state = mkdtempSync(join(dir, 'state-'));
  const projects = [{ id: 'p1', root: state, host: { kind: 'gitlab' as const, baseUrl: gl.url, path: PATH } }];
  gl.addIssue(PATH, { title: 'Behind our own CA', labels: ['svc'] });
  const host = (env: Record<string, string>) =>
    new CodeHost({ config: validateConfig('runner.json', { profiles: [], codehost: { apiUrl: 'http://127.0.0.1:9/never' } }), env: { GITLAB_TOKEN: gl.token, XDG_STATE_HOME: state, HOME: state, ...env }, projects: () => projects, append: () => {} });
  const without = host({});
  const failed = await without.adapter(projects[0]).openIssues(PATH, { urgent: true }).then(() => null, (e: Error) => e);
  assert.match(failed?.message ?? '', /did not answer \((UNABLE_TO_VERIFY_LEAF_SIGNATURE|SELF_SIGNED_CERT_IN_CHAIN|UNABLE_TO_GET_ISSUER_CERT_LOCALLY|DEPTH_ZERO_SELF_SIGNED_CERT)\)/);
  const trusted = host({ CODEHOST_CA_FILE: ca });
  const issues = await trusted.adapter(projects[0]).openIssues(PATH, { urgent: true });
  assert.equal(issues.items.map((i) => i.title), ['Behind our own CA']);
  assert.equal(gl.unexpected, []);
});

test.run();

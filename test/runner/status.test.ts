// `svc-runner status` (spec: Runner command line, Other behaviours) with the real bundle against the
// REAL server: config path, paired or not and as which id, the server, number of profiles, spool
// state, whether the daemon runs, whether the server answers (GET <server>/health). Exit 0 when the
// server answers; 1 when it is unreachable, when the machine is not paired (there is no server to
// ask) and when runner.json is invalid.
import { createServer } from 'node:http';
import { createServer as createNetServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { startServer } from '../helpers/server.ts';
import type { RunningServer } from '../helpers/server.ts';
import { killDaemons, runCli, sandbox, startDaemon, waitUntil } from './_harness.ts';
import type { Sandbox } from './_harness.ts';

let server: RunningServer;
let sb: Sandbox;
test.before(async () => {
  server = await startServer({ admin: true });
});
test.after(async () => {
  await killDaemons();
  await server?.cleanup();
});
test.before.each(() => {
  sb = sandbox();
});
test.after.each(async () => {
  await killDaemons();
  sb.cleanup();
});

const esc = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
const closedPort = () =>
  new Promise<number>((ok) => {
    const srv = createNetServer().listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as AddressInfo;
      srv.close(() => ok(port));
    });
  });

/** Pair the sandbox with the real server through the admin API and the real `pair`. */
async function pairSandbox(s: Sandbox, extra: Record<string, unknown> = {}): Promise<{ runnerId: string; token: string }> {
  const made = await (await server.api('/api/runners', { method: 'POST', json: { name: `m-${Math.random().toString(36).slice(2, 8)}` } })).json();
  s.writeConfig({ otlp: { enabled: false }, ...extra });
  const r = await runCli(s, ['pair', '--server', server.url, '--code', made.code, '--no-detect']);
  assert.is(r.status, 0, r.stderr);
  return { runnerId: made.runner.id, token: s.readConfig().token };
}

test('not paired → exit 1: config path, "paired: no", no server, nothing asked', async () => {
  const none = await runCli(sb, ['status']);
  assert.is(none.status, 1);
  assert.match(none.stdout, new RegExp(`^config: ${esc(sb.configPath)}$`, 'm'));
  assert.match(none.stdout, /^paired: no \(no runner\.json yet\)$/m);
  assert.match(none.stdout, /^server: none$/m);
  assert.match(none.stdout, /^profiles: 0$/m);
  assert.match(none.stdout, /^spool: 0 event\(s\) waiting/m);
  assert.match(none.stdout, /^reach: unknown \(not paired\)$/m);

  sb.writeConfig({ profiles: [{ id: 'c', runtime: 'claude', env: {}, args: [] }] });
  const file = await runCli(sb, ['status']);
  assert.is(file.status, 1);
  assert.match(file.stdout, /^paired: no$/m);
  assert.match(file.stdout, /^profiles: 1$/m);
});

test('paired with the real server → exit 0 with id, server, profiles, spool count, daemon state, reachable; the token is not printed', async () => {
  const { runnerId, token } = await pairSandbox(sb, { profiles: [{ id: 'a', runtime: 'claude', env: {}, args: [] }, { id: 'b', runtime: 'codex', env: {}, args: [] }] });
  assert.is((await runCli(sb, ['spool-append', 'test.status', '--count', '4'])).status, 0);
  const r = await runCli(sb, ['status']);
  assert.is(r.status, 0, r.stdout + r.stderr);
  assert.match(r.stdout, new RegExp(`^config: ${esc(sb.configPath)}$`, 'm'));
  assert.match(r.stdout, new RegExp(`^paired: yes, as runner ${runnerId}$`, 'm'));
  assert.match(r.stdout, new RegExp(`^server: ${esc(server.url)}$`, 'm'));
  assert.match(r.stdout, /^profiles: 2$/m);
  assert.match(r.stdout, new RegExp(`^spool: 4 event\\(s\\) waiting for the server \\(${esc(sb.spoolDir)}\\)$`, 'm'));
  assert.match(r.stdout, /^daemon: not running$/m);
  assert.match(r.stdout, /^reach: reachable \(\d+ ms\)$/m);
  assert.not.ok((r.stdout + r.stderr).includes(token));
});

test('with the daemon connected: "daemon: running (pid N)" and the spool drained by the server\'s acks', async () => {
  await pairSandbox(sb);
  await runCli(sb, ['spool-append', 'test.status', '--count', '2']);
  const d = startDaemon(sb);
  await waitUntil(() => sb.spoolFiles().length === 0, 15_000, () => `the spool to drain\n${d.output()}`);
  const r = await runCli(sb, ['status']);
  assert.is(r.status, 0, r.stdout + r.stderr);
  assert.match(r.stdout, new RegExp(`^daemon: running \\(pid ${d.proc.pid}\\)$`, 'm'));
  assert.match(r.stdout, /^spool: 0 event\(s\) waiting/m);
  await d.kill();
  assert.match((await runCli(sb, ['status'])).stdout, /^daemon: not running$/m);
});

test('the server unreachable (closed port) or unhealthy → exit 1 with the cause', async () => {
  const { runnerId } = await pairSandbox(sb);
  const port = await closedPort();
  sb.writeConfig({ ...sb.readConfig(), server: `http://127.0.0.1:${port}` });
  const gone = await runCli(sb, ['status']);
  assert.is(gone.status, 1);
  assert.match(gone.stdout, new RegExp(`^paired: yes, as runner ${runnerId}$`, 'm'));
  assert.match(gone.stdout, /^reach: unreachable \(ECONNREFUSED\)$/m);

  const sick = createServer((_req, res) => res.writeHead(503, { 'content-type': 'application/json' }).end('{"status":"starting"}'));
  await new Promise<void>((r) => sick.listen(0, '127.0.0.1', r));
  try {
    sb.writeConfig({ ...sb.readConfig(), server: `http://127.0.0.1:${(sick.address() as AddressInfo).port}` });
    const unhealthy = await runCli(sb, ['status']);
    assert.is(unhealthy.status, 1);
    assert.match(unhealthy.stdout, /^reach: unreachable \(GET \/health answered HTTP 503\)$/m);
  } finally {
    await new Promise((r) => sick.close(r));
  }
});

test('the real server stopped → exit 1', async () => {
  const other = await startServer();
  try {
    sb.writeConfig({ server: other.url, runnerId: 'r-1', token: 'svc_rt_x' });
    const running = await runCli(sb, ['status']);
    assert.match(running.stdout, /^reach: reachable/m, 'answers while it runs');
    assert.match(running.stdout, /^token: not accepted/m, 'a token it never issued');
    assert.is(running.status, 1);
    await other.stop();
    const r = await runCli(sb, ['status']);
    assert.is(r.status, 1);
    assert.match(r.stdout, /^reach: unreachable \(ECONNREFUSED\)$/m);
  } finally {
    await other.cleanup();
  }
});

test('an invalid runner.json → exit 1 naming the bad fields, never their values', async () => {
  sb.writeConfig({ server: 'http://127.0.0.1:9', runnerId: 'r', token: 'svc_rt_SECRET value with spaces', profiles: 'x' });
  const r = await runCli(sb, ['status']);
  assert.is(r.status, 1);
  assert.match(r.stdout, new RegExp(`^config: ${esc(sb.configPath)}$`, 'm'));
  assert.match(r.stderr, /token: /);
  assert.match(r.stderr, /profiles: must be array/);
  assert.not.match(r.stdout + r.stderr, /SECRET/);
});

test('revoked → status exits 1 saying "revoked: pair again"; a code for the revoked runner pairs it again; then status is 0 and the daemon is accepted', async () => {
  const { runnerId } = await pairSandbox(sb);
  const ok = await runCli(sb, ['status']);
  assert.is(ok.status, 0, ok.stdout + ok.stderr);
  assert.match(ok.stdout, /^token: accepted$/m);
  assert.is((await server.api(`/api/runners/${runnerId}`, { method: 'DELETE' })).status, 204);
  const revoked = await runCli(sb, ['status']);
  assert.is(revoked.status, 1, revoked.stdout);
  assert.match(revoked.stdout, /^reach: reachable/m, 'the server itself answers');
  assert.match(revoked.stdout, /^token: revoked: pair again/m);
  const code = await (await server.api(`/api/runners/${runnerId}/pairing-code`, { method: 'POST' })).json();
  const again = await runCli(sb, ['pair', '--server', server.url, '--code', code.code, '--no-detect']);
  assert.is(again.status, 0, again.stderr);
  assert.is(sb.readConfig().runnerId, runnerId, 'the same runner');
  const back = await runCli(sb, ['status']);
  assert.is(back.status, 0, back.stdout);
  assert.match(back.stdout, /^token: accepted$/m);
  const listed = (await (await server.api('/api/runners')).json()).runners.find((r: { id: string }) => r.id === runnerId);
  assert.is(listed.revokedAt, null);
  const d = startDaemon(sb);
  await waitUntil(async () => (await (await server.api('/api/runners')).json()).runners.find((r: { id: string }) => r.id === runnerId).status === 'online', 30_000, 'the re-paired runner online');
  await d.kill();
});

test('replaced by a newer pairing → status exits 1 saying the token is not accepted', async () => {
  const { runnerId } = await pairSandbox(sb);
  const code = await (await server.api(`/api/runners/${runnerId}/pairing-code`, { method: 'POST' })).json();
  const other = sandbox();
  try {
    other.writeConfig({ otlp: { enabled: false } });
    assert.is((await runCli(other, ['pair', '--server', server.url, '--code', code.code, '--no-detect'])).status, 0);
    const old = await runCli(sb, ['status']);
    assert.is(old.status, 1);
    assert.match(old.stdout, /^token: not accepted \(replaced by a newer pairing, or unknown\): pair again/m);
    assert.is((await runCli(other, ['status'])).status, 0);
  } finally {
    other.cleanup();
  }
});

test.run();

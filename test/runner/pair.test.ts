// `svc-runner pair` (spec: Runner pairing, Runner command line, Runner exit codes) with the real bundle
// against the REAL server: an admin makes the one-time code through the admin API, the runner trades it.
// What is checked: runner.json (server, runnerId, token; mode 0600; replaced by rename, no temp file
// left), the runner row the API shows afterwards, profiles kept on re-pairing, detection with fake
// `claude`/`codex` executables, refused codes (used, wrong, expired → exit 1, file untouched), bad
// arguments (exit 2 with usage, the code not spent), a path prefix in --server (through a small
// reverse proxy), and that the token never reaches stdout or stderr.
import { readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { createServer, request } from 'node:http';
import type { Server } from 'node:http';
import { createServer as createNetServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { dirname, join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { openPglite } from '../../functions/lib/db/pglite.ts';
import { openPostgres } from '../../functions/lib/db/postgres.ts';
import { sql } from '../../functions/lib/db/index.ts';
import { serverDbEnv } from '../helpers/db.ts';
import { startServer } from '../helpers/server.ts';
import type { RunningServer } from '../helpers/server.ts';
import { connect } from '../helpers/wsclient.ts';
import { runCli, sandbox } from './_harness.ts';
import type { Sandbox } from './_harness.ts';

let db: Awaited<ReturnType<typeof serverDbEnv>>;
let server: RunningServer;
let adminToken = '';
let sb: Sandbox;
const sandboxes: Sandbox[] = [];

test.before(async () => {
  db = await serverDbEnv();
  server = await startServer({ admin: true, dbEnv: db.env });
  adminToken = server.admin.token;
});
test.after(async () => {
  await server?.cleanup();
  await db?.cleanup();
});
test.before.each(() => {
  sb = sandbox();
  sandboxes.push(sb);
});
test.after.each(() => {
  for (const s of sandboxes.splice(0)) s.cleanup();
});

/** The admin API of whichever server runs now (it is restarted once, on the same database). */
const api = (path: string, init: RequestInit & { json?: unknown } = {}) => {
  const { json, ...rest } = init;
  const headers = new Headers(rest.headers);
  headers.set('authorization', `Bearer ${adminToken}`);
  if (json !== undefined) headers.set('content-type', 'application/json');
  return fetch(server.url + path, { ...rest, headers, body: json !== undefined ? JSON.stringify(json) : rest.body });
};

/** A new runner through the admin API: its id and a one-time code. */
async function newRunner(name: string): Promise<{ id: string; code: string }> {
  const res = await api('/api/runners', { method: 'POST', json: { name } });
  assert.is(res.status, 201);
  const body = await res.json();
  return { id: body.runner.id, code: body.code };
}
const newCode = async (runnerId: string): Promise<string> => (await (await api(`/api/runners/${runnerId}/pairing-code`, { method: 'POST' })).json()).code;
const runnerRow = async (id: string) => (await (await api('/api/runners')).json()).runners.find((r: { id: string }) => r.id === id);
/** A port nothing listens on (fetch refuses some low ports such as 1 before connecting). */
const closedPort = () =>
  new Promise<number>((ok) => {
    const srv = createNetServer().listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as AddressInfo;
      srv.close(() => ok(port));
    });
  });
const mode = (p: string) => statSync(p).mode & 0o777;
const otherFiles = (s: Sandbox) => readdirSync(dirname(s.configPath)).filter((n) => n !== 'runner.json');

test('pair with a code from the admin API → exit 0; runner.json holds server, id and token, mode 0600, no temp file; the row shows the machine', async () => {
  const { id, code } = await newRunner('alpha');
  const r = await runCli(sb, ['pair', '--server', `${server.url}/`, '--code', code.toLowerCase(), '--no-detect']);
  assert.is(r.status, 0, r.stderr);
  const c = sb.readConfig();
  assert.is(c.server, server.url, 'the trailing slash is dropped');
  assert.is(c.runnerId, id);
  assert.match(c.token, /^svc_rt_/);
  assert.ok(!Number.isNaN(Date.parse(c.sessions.ingestSince)), 'sessions.ingestSince is set by pair');
  assert.is(mode(sb.configPath), 0o600);
  assert.equal(otherFiles(sb), [], 'no temp file left beside runner.json');
  assert.match(r.stdout, new RegExp(`Paired with .* as runner ${id}`));
  assert.not.ok((r.stdout + r.stderr).includes(c.token), 'the token is never printed');

  const row = await runnerRow(id);
  assert.ok(row.pairedAt, 'the row is paired');
  assert.match(row.version, /^\d+\.\d+\.\d+/);
  assert.match(row.target, /^[a-z]+-[a-z0-9]+$/);
  assert.ok(row.hostname, 'the hostname is sent');
  // The token written is the one the server accepts.
  const ws = connect(server.url, c.token);
  assert.is((await ws.next('welcome')).runnerId, id);
  ws.ws.close();
  await ws.closed;
});

test('re-pairing the same runner replaces the token, keeps profiles, other keys and the watch list; a new runner id drops the watch list', async () => {
  const { id, code } = await newRunner('beta');
  const profiles = [{ id: 'mine', runtime: 'codex', binary: '/opt/codex', env: { CODEX_HOME: '/srv/codex' }, args: ['--full-auto'] }];
  sb.writeConfig({ profiles, fleet: { pollSeconds: 30 }, disabledCommands: ['terminal.attach'] });
  writeFileSync(sb.configPath, readFileSync(sb.configPath), { mode: 0o644 });
  const first = await runCli(sb, ['pair', '--server', server.url, '--code', code]);
  assert.is(first.status, 0, first.stderr);
  assert.match(first.stdout, /Kept 1 configured profile/);
  const paired = sb.readConfig();
  assert.equal(paired.profiles, profiles, 'profiles kept, no detection when there are some');
  assert.is(mode(sb.configPath), 0o600, 'a wider mode is narrowed');

  // The server's watch list cache (written by the daemon) survives a re-pairing of the same runner.
  sb.writeConfig({ ...paired, projects: [{ id: 'p1', root: '/srv/p1' }] });
  const inode = statSync(sb.configPath).ino;
  const again = await runCli(sb, ['pair', '--server', server.url, '--code', await newCode(id)]);
  assert.is(again.status, 0, again.stderr);
  const repaired = sb.readConfig();
  assert.is(repaired.runnerId, id);
  assert.is.not(repaired.token, paired.token, 'a new token');
  assert.equal(repaired.profiles, profiles);
  assert.equal([repaired.fleet, repaired.disabledCommands, repaired.projects], [{ pollSeconds: 30 }, ['terminal.attach'], [{ id: 'p1', root: '/srv/p1' }]]);
  assert.is.not(statSync(sb.configPath).ino, inode, 'written to a new file and renamed over the old one');
  assert.equal(otherFiles(sb), []);
  assert.is(await connect(server.url, paired.token).closed, 4401, 'the old token is refused');

  const other = await newRunner('gamma');
  const moved = await runCli(sb, ['pair', '--server', server.url, '--code', other.code]);
  assert.is(moved.status, 0, moved.stderr);
  const c = sb.readConfig();
  assert.equal([c.runnerId, c.projects], [other.id, undefined], "another runner's watch list is forgotten");
  assert.equal(c.profiles, profiles);
  assert.not.ok((again.stdout + again.stderr + moved.stdout + moved.stderr).includes(c.token) || (again.stdout + again.stderr).includes(repaired.token));
});

test('pair without profiles detects claude and codex on PATH and prints each with its authentication state; --no-detect does not', async () => {
  sb.fakeBin('claude', 'echo "2.0.14 (Claude Code)"');
  sb.fakeBin('codex', 'echo "codex-cli 0.46.0"');
  const r = await runCli(sb, ['pair', '--server', server.url, '--code', (await newRunner('delta')).code], { ANTHROPIC_API_KEY: 'sk-ant-test' });
  assert.is(r.status, 0, r.stderr);
  assert.match(r.stdout, /Detected profiles:/);
  assert.match(r.stdout, /claude \(claude\): authenticated, .*\/bin\/claude, 2\.0\.14 \(Claude Code\)/);
  assert.match(r.stdout, /codex \(codex\): NOT authenticated, .*\/bin\/codex, codex-cli 0\.46\.0/);
  assert.equal(
    sb.readConfig().profiles,
    [
      { id: 'claude', runtime: 'claude', env: {}, args: [] },
      { id: 'codex', runtime: 'codex', env: {}, args: [] },
    ],
  );
  assert.not.match(r.stdout + r.stderr, /sk-ant-test/);

  const quiet = sandbox();
  sandboxes.push(quiet);
  quiet.fakeBin('claude', 'echo 1');
  const q = await runCli(quiet, ['pair', '--server', server.url, '--code', (await newRunner('epsilon')).code, '--no-detect']);
  assert.is(q.status, 0, q.stderr);
  assert.is(quiet.readConfig().profiles, undefined, '--no-detect writes no profiles');
  assert.not.match(q.stdout, /Detected|claude/);

  const none = sandbox();
  sandboxes.push(none);
  const n = await runCli(none, ['pair', '--server', server.url, '--code', (await newRunner('zeta')).code]);
  assert.is(n.status, 0, n.stderr);
  assert.match(n.stdout, /No agent runtime \(claude, codex\) found on PATH/);
  assert.equal(none.readConfig().profiles, []);
});

test('a used or wrong code → exit 1 with the server\'s reason; runner.json unchanged, nothing left behind', async () => {
  const { code } = await newRunner('eta');
  const first = sandbox();
  sandboxes.push(first);
  assert.is((await runCli(first, ['pair', '--server', server.url, '--code', code, '--no-detect'])).status, 0);

  sb.writeConfig({ profiles: [], fleet: { pollSeconds: 20 } });
  const before = readFileSync(sb.configPath, 'utf8');
  for (const bad of [code, 'ZZZZ-9999']) {
    const r = await runCli(sb, ['pair', '--server', server.url, '--code', bad]);
    assert.is(r.status, 1, r.stdout + r.stderr);
    assert.match(r.stderr, /pairing failed: this pairing code is unknown, used or expired; ask an admin for a new one \(invalid_code\)/);
    assert.is(r.stdout, '');
    assert.is(readFileSync(sb.configPath, 'utf8'), before, 'runner.json unchanged');
    assert.equal(otherFiles(sb), []);
  }
  const fresh = sandbox();
  sandboxes.push(fresh);
  assert.is((await runCli(fresh, ['pair', '--server', server.url, '--code', 'ZZZZ-9999'])).status, 1);
  assert.equal(readdirSync(fresh.dir).includes('config') ? readdirSync(dirname(fresh.configPath)) : [], [], 'no runner.json is created');
});

test('pair: an unreachable server or a server that is not svc → exit 1, runner.json unchanged', async () => {
  sb.writeConfig({ profiles: [] });
  const before = readFileSync(sb.configPath, 'utf8');
  const port = await closedPort();
  const down = await runCli(sb, ['pair', '--server', `http://127.0.0.1:${port}`, '--code', 'ABCD-2345']);
  assert.is(down.status, 1);
  assert.match(down.stderr, new RegExp(`pairing failed: cannot reach http://127\\.0\\.0\\.1:${port} \\(ECONNREFUSED\\)`));
  const notSvc = await runCli(sb, ['pair', '--server', `${server.url}/nothing-here`, '--code', 'ABCD-2345']);
  assert.is(notSvc.status, 1);
  assert.match(notSvc.stderr, /pairing failed: /);
  assert.is(readFileSync(sb.configPath, 'utf8'), before);
});

test('a runner.json that cannot be used → exit 1 before the code is spent; the code still works afterwards', async () => {
  const { id, code } = await newRunner('theta');
  sb.writeConfig({ profiles: [{ id: 'x', runtime: 'nope', env: {}, args: [] }], token: 'svc_rt_SECRET_IN_FILE' });
  const r = await runCli(sb, ['pair', '--server', server.url, '--code', code]);
  assert.is(r.status, 1);
  assert.match(r.stderr, /pairing not attempted: .*runner\.json is invalid/);
  assert.match(r.stderr, /profiles\.0\.runtime/);
  assert.not.match(r.stderr, /SECRET_IN_FILE|nope/, 'the error names fields, never values');
  assert.is((await runnerRow(id)).pairedAt, null, 'the code was not sent');

  // A config directory that cannot be made (a file in the way) is found out before the code is sent.
  const blocked = sandbox();
  sandboxes.push(blocked);
  writeFileSync(join(blocked.dir, 'not-a-dir'), '');
  const b = await runCli(blocked, ['pair', '--server', server.url, '--code', code], { XDG_CONFIG_HOME: join(blocked.dir, 'not-a-dir') });
  assert.is(b.status, 1);
  assert.match(b.stderr, /pairing not attempted: cannot write .*not-a-dir\/svc\/runner\.json/);
  assert.is((await runnerRow(id)).pairedAt, null, 'the code was not sent');

  const ok = sandbox();
  sandboxes.push(ok);
  assert.is((await runCli(ok, ['pair', '--server', server.url, '--code', code, '--no-detect'])).status, 0, 'the code is still good');
});

test('bad --server or --code → exit 2 with usage; nothing written, nothing sent (the code still works)', async () => {
  const { code } = await newRunner('iota');
  const host = server.url.replace(/^http:\/\//, '');
  const servers = [
    `http://user:pw@${host}`,
    `http://user@${host}`,
    `${server.url}/?x=1`,
    `${server.url}/#f`,
    `ftp://${host}`,
    `${host}`,
    'http://',
    '',
  ];
  for (const s of servers) {
    const r = await runCli(sb, ['pair', '--server', s, '--code', code]);
    assert.is(r.status, 2, `--server '${s}': ${r.stderr}`);
    assert.match(r.stderr, /--server/);
    assert.match(r.stderr, /Usage: svc-runner <command>/);
  }
  const missing = await runCli(sb, ['pair', '--code', code]);
  assert.is(missing.status, 2);
  assert.match(missing.stderr, /--server is required/);
  for (const c of ['ABCD2345', 'ABC-12345', 'ABCD-2345-EFGH', 'ABCD_2345', 'ÄBCD-2345', '']) {
    const r = await runCli(sb, ['pair', '--server', server.url, '--code', c]);
    assert.is(r.status, 2, `--code '${c}': ${r.stderr}`);
    assert.match(r.stderr, /--code/);
    assert.match(r.stderr, /Usage: svc-runner/);
  }
  assert.is((await runCli(sb, ['pair', '--server', server.url])).status, 2, 'no --code');
  assert.is((await runCli(sb, ['pair', '--server', server.url, '--code', code, '--detect'])).status, 2, '--detect is not an option of pair');
  assert.is((await runCli(sb, ['pair', '--server', server.url, '--code', code, 'extra'])).status, 2, 'no positional argument');
  assert.not.ok(readdirSync(sb.dir).includes('config'), 'nothing written');
  assert.is((await runCli(sb, ['pair', '--server', server.url, '--code', code, '--no-detect'])).status, 0, 'the code was never spent');
});

test('--server with a path prefix: POST <prefix>/runners/pair through a reverse proxy, the prefix kept in runner.json, status asks <prefix>/health', async () => {
  const seen: string[] = [];
  const proxy: Server = createServer((req, res) => {
    seen.push(`${req.method} ${req.url}`);
    if (!req.url?.startsWith('/svc/')) return res.writeHead(404).end();
    const target = new URL(server.url);
    const up = request({ host: target.hostname, port: target.port, method: req.method, path: req.url.slice('/svc'.length), headers: req.headers }, (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    });
    up.on('error', () => res.writeHead(502).end());
    req.pipe(up);
  });
  await new Promise<void>((r) => proxy.listen(0, '127.0.0.1', r));
  try {
    const base = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}/svc`;
    const { id, code } = await newRunner('kappa');
    const r = await runCli(sb, ['pair', '--server', `${base}//`, '--code', code, '--no-detect']);
    assert.is(r.status, 0, r.stderr);
    assert.equal(seen, ['POST /svc/runners/pair']);
    assert.equal([sb.readConfig().server, sb.readConfig().runnerId], [base, id]);
    const s = await runCli(sb, ['status']);
    assert.is(s.status, 0, s.stdout + s.stderr);
    assert.is(seen[1], 'GET /svc/health');
  } finally {
    await new Promise((r) => proxy.close(r));
  }
});

test('an answer with a field this runner does not know still pairs (the code is spent by then); one without a token does not', async () => {
  // A proxy standing in for a server of a later version: it adds a field to the pairing answer, or drops the token.
  let mode: 'extra' | 'no-token' = 'extra';
  const proxy: Server = createServer((req, res) => {
    const target = new URL(server.url);
    const up = request({ host: target.hostname, port: target.port, method: req.method, path: req.url, headers: req.headers }, async (answer) => {
      let text = '';
      for await (const chunk of answer) text += chunk;
      const body = JSON.parse(text);
      if (answer.statusCode === 200) {
        if (mode === 'extra') body.serverFeatures = ['later'];
        else delete body.token;
      }
      const out = JSON.stringify(body);
      res.writeHead(answer.statusCode ?? 502, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(out) }).end(out);
    });
    up.on('error', () => res.writeHead(502).end());
    req.pipe(up);
  });
  await new Promise<void>((r) => proxy.listen(0, '127.0.0.1', r));
  try {
    const base = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`;
    const { id, code } = await newRunner('lambda');
    const r = await runCli(sb, ['pair', '--server', base, '--code', code, '--no-detect']);
    assert.is(r.status, 0, r.stderr);
    assert.equal([sb.readConfig().runnerId, typeof sb.readConfig().token, 'serverFeatures' in sb.readConfig()], [id, 'string', false]);
    mode = 'no-token';
    const other = await newRunner('mu');
    const before = readFileSync(sb.configPath, 'utf8');
    const bad = await runCli(sb, ['pair', '--server', base, '--code', other.code, '--no-detect']);
    assert.is(bad.status, 1);
    assert.match(bad.stderr, /the server's answer is not a pairing response/);
    assert.is(readFileSync(sb.configPath, 'utf8'), before);
  } finally {
    await new Promise((r) => proxy.close(r));
  }
});

// Last: the server is stopped to age a code in its database, then started again on the same data.
test('an expired code → exit 1 with the server\'s reason, runner.json unchanged', async () => {
  const { id, code } = await newRunner('lambda');
  await server.stop();
  const store = db.env.DATABASE_URL ? await openPostgres(db.env.DATABASE_URL, 1) : await openPglite(db.env.PGLITE_DATA_DIR);
  try {
    await store.query(sql`update pairing_codes set expires_at = now() - interval '1 minute' where runner_id = ${id}`);
  } finally {
    await store.close();
  }
  server = await startServer({ dbEnv: db.env });
  sb.writeConfig({ profiles: [] });
  const before = readFileSync(sb.configPath, 'utf8');
  const r = await runCli(sb, ['pair', '--server', server.url, '--code', code]);
  assert.is(r.status, 1);
  assert.match(r.stderr, /unknown, used or expired/);
  assert.is(readFileSync(sb.configPath, 'utf8'), before);
  assert.is((await runnerRow(id)).pairedAt, null);
});

test.run();

// The runner's local commands with the real bundle: pair (errors and re-pairing against a fake API
// that also checks a path prefix), status, profiles with detection, install-service (systemd unit
// checked by systemd-analyze, launchd plist parsed and its 78→0 wrapper run).
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { dirname, join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { startFakeServer } from './_fake-server.ts';
import type { FakeServer } from './_fake-server.ts';
import { BUNDLE, pairedConfig, runCli, sandbox } from './_harness.ts';
import type { Sandbox } from './_harness.ts';

let fake: FakeServer;
let sb: Sandbox;
test.before.each(async () => {
  fake = await startFakeServer();
  sb = sandbox();
});
test.after.each(async () => {
  await fake.stop();
  sb.cleanup();
});

const mode = (p: string) => statSync(p).mode & 0o777;

test('pair: writes server, id and token (0600, no temp file), keeps profiles; re-pairing replaces the pairing', async () => {
  sb.writeConfig({ profiles: [{ id: 'mine', runtime: 'claude', env: { FOO: 'bar' }, args: ['--x'] }], fleet: { pollSeconds: 30 } });
  const r = await runCli(sb, ['pair', '--server', fake.url, '--code', 'abcd-2345']);
  assert.is(r.status, 0, r.stderr);
  assert.equal(fake.pairRequests[0].body.code, 'ABCD-2345', 'the code is normalized');
  const c = sb.readConfig();
  assert.equal([c.server, c.runnerId, c.token], [fake.url, 'runner-paired-1', 'svc_rt_PAIRED_SECRET_TOKEN_0123456789']);
  assert.equal(c.profiles, [{ id: 'mine', runtime: 'claude', env: { FOO: 'bar' }, args: ['--x'] }], 'profiles kept, no detection');
  assert.is(c.fleet.pollSeconds, 30);
  assert.ok(c.sessions.ingestSince, 'sessions.ingestSince set by pair');
  assert.is(mode(sb.configPath), 0o600);
  assert.equal(readdirSync(dirname(sb.configPath)).filter((n) => n !== 'runner.json'), [], 'no temp file left');
  assert.not.match(r.stdout + r.stderr, /PAIRED_SECRET/, 'the token is never printed');

  fake.options.pair = () => ({ status: 200, body: { runnerId: 'runner-paired-2', token: 'svc_rt_SECOND_TOKEN_0123456789abcdef' } });
  const again = await runCli(sb, ['pair', '--server', fake.url, '--code', 'WXYZ-6789']);
  assert.is(again.status, 0, again.stderr);
  assert.equal([sb.readConfig().runnerId, sb.readConfig().token], ['runner-paired-2', 'svc_rt_SECOND_TOKEN_0123456789abcdef']);
  assert.equal(sb.readConfig().profiles[0].id, 'mine');
});

test('pair on a machine without profiles detects them and prints each with its authentication state; --no-detect does not', async () => {
  sb.fakeBin('claude', 'echo "2.0.1 (Claude Code)"');
  const r = await runCli(sb, ['pair', '--server', fake.url, '--code', 'ABCD-2345']);
  assert.is(r.status, 0, r.stderr);
  assert.match(r.stdout + r.stderr, /claude \(claude\): NOT authenticated/);
  assert.equal(sb.readConfig().profiles.map((p: any) => p.runtime), ['claude']);

  const other = sandbox();
  try {
    other.fakeBin('claude', 'echo 1');
    const quiet = await runCli(other, ['pair', '--server', fake.url, '--code', 'ABCD-2345', '--no-detect']);
    assert.is(quiet.status, 0, quiet.stderr);
    assert.equal(other.readConfig().profiles ?? [], []);
  } finally {
    other.cleanup();
  }
});

test('pair: a refused code → exit 1 with the server\'s reason and runner.json unchanged; a path prefix is kept', async () => {
  sb.writeConfig(pairedConfig('http://old.example.test'));
  const before = readFileSync(sb.configPath, 'utf8');
  fake.options.pair = () => ({ status: 400, body: { error: { code: 'invalid_code', message: 'this pairing code is unknown, used or expired' } } });
  const r = await runCli(sb, ['pair', '--server', `${fake.url}/svc`, '--code', 'ABCD-2345', '--no-detect']);
  assert.is(r.status, 1);
  assert.match(r.stderr, /unknown, used or expired/);
  assert.is(readFileSync(sb.configPath, 'utf8'), before);
  assert.is(fake.pairRequests[0].url, '/svc/runners/pair', 'the prefix is kept');

  const down = await runCli(sb, ['pair', '--server', 'http://127.0.0.1:1', '--code', 'ABCD-2345', '--no-detect']);
  assert.is(down.status, 1);
  assert.is(readFileSync(sb.configPath, 'utf8'), before);
});

test('pair: bad --server or --code → exit 2 with usage, nothing sent', async () => {
  for (const server of ['ftp://h', 'https://user:pw@h', 'https://h/?q=1', 'https://h/#f', 'not a url', '']) {
    const r = await runCli(sb, ['pair', '--server', server, '--code', 'ABCD-2345']);
    assert.is(r.status, 2, `--server ${server}: ${r.stderr}`);
    assert.match(r.stderr, /Usage: svc-runner/);
  }
  for (const code of ['ABCD2345', 'AB-CD', 'ABCD-2345-X', '']) {
    assert.is((await runCli(sb, ['pair', '--server', fake.url, '--code', code])).status, 2, `--code ${code}`);
  }
  assert.is((await runCli(sb, ['pair', '--code', 'ABCD-2345'])).status, 2, 'no --server');
  assert.is((await runCli(sb, ['pair', '--server', fake.url, '--code', 'ABCD-2345', '--bogus'])).status, 2, 'unknown option');
  assert.is(fake.pairRequests.length, 0);
});

test('status: what the spec lists; exit 0 when the server answers, 1 when unreachable or not paired', async () => {
  const notPaired = await runCli(sb, ['status']);
  assert.is(notPaired.status, 1);
  assert.match(notPaired.stdout, /paired: no/);

  sb.writeConfig(pairedConfig(fake.url, { profiles: [{ id: 'c', runtime: 'claude', env: {}, args: [] }] }));
  await runCli(sb, ['spool-append', 'test.status', '--count', '3']);
  const ok = await runCli(sb, ['status']);
  assert.is(ok.status, 0, ok.stdout + ok.stderr);
  assert.match(ok.stdout, new RegExp(`config: ${sb.configPath.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}`));
  assert.match(ok.stdout, /paired: yes, as runner runner-test-1/);
  assert.match(ok.stdout, new RegExp(`server: ${fake.url}`));
  assert.match(ok.stdout, /profiles: 1/);
  assert.match(ok.stdout, /spool: 3 event\(s\) waiting/);
  assert.match(ok.stdout, /daemon: not running/);
  assert.match(ok.stdout, /reach: reachable/);
  assert.not.match(ok.stdout + ok.stderr, /svc_rt_test_token/);

  fake.options.health = 503;
  const unhealthy = await runCli(sb, ['status']);
  assert.is(unhealthy.status, 1);
  assert.match(unhealthy.stdout, /unreachable \(GET \/health answered HTTP 503\)/);
  const closed = await new Promise<number>((ok) => {
    const srv = createServer().listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as AddressInfo;
      srv.close(() => ok(port));
    });
  });
  sb.writeConfig(pairedConfig(`http://127.0.0.1:${closed}`));
  const gone = await runCli(sb, ['status']);
  assert.is(gone.status, 1);
  assert.match(gone.stdout, /reach: unreachable \(ECONNREFUSED\)/);
});

test('profiles: configured with authenticated; --detect proposes and changes nothing; --detect --write replaces; --write alone is exit 2', async () => {
  sb.fakeBin('claude', 'echo "2.0.1 (Claude Code)"');
  sb.fakeBin('codex', 'echo "codex-cli 0.50.0"');
  mkdirSync(join(sb.home, '.claude'), { recursive: true });
  writeFileSync(join(sb.home, '.claude', '.credentials.json'), '{}');
  sb.writeConfig(pairedConfig(fake.url, { profiles: [{ id: 'cx', runtime: 'codex', env: { OPENAI_API_KEY: 'sk-SECRET-VALUE' }, args: [] }] }));
  const before = readFileSync(sb.configPath, 'utf8');

  const listed = await runCli(sb, ['profiles']);
  assert.is(listed.status, 0, listed.stderr);
  const configured = JSON.parse(listed.stdout);
  assert.equal(configured.map((p: any) => [p.id, p.runtime, p.authenticated]), [['cx', 'codex', true]]);
  assert.not.match(listed.stdout, /sk-SECRET-VALUE/, 'secret-looking env values are hidden');

  const proposed = await runCli(sb, ['profiles', '--detect']);
  assert.is(proposed.status, 0, proposed.stderr);
  const proposal = JSON.parse(proposed.stdout);
  assert.equal(proposal.map((p: any) => [p.id, p.runtime, p.authenticated, p.version]), [
    ['claude', 'claude', true, '2.0.1 (Claude Code)'],
    ['cx', 'codex', true, 'codex-cli 0.50.0'],
  ]);
  assert.is(readFileSync(sb.configPath, 'utf8'), before, '--detect changes nothing');

  // Without the key and the credentials file, neither is authenticated; CODEX_HOME/auth.json counts.
  const bare = sandbox();
  try {
    bare.fakeBin('claude', 'echo 1');
    bare.fakeBin('codex', 'echo 1');
    mkdirSync(join(bare.dir, 'codex-home'), { recursive: true });
    const none = JSON.parse((await runCli(bare, ['profiles', '--detect'])).stdout);
    assert.equal(none.map((p: any) => p.authenticated), [false, false]);
    writeFileSync(join(bare.dir, 'codex-home', 'auth.json'), '{}');
    const withHome = JSON.parse((await runCli(bare, ['profiles', '--detect'], { CODEX_HOME: join(bare.dir, 'codex-home') })).stdout);
    assert.equal(withHome.map((p: any) => [p.runtime, p.authenticated]), [['claude', false], ['codex', true]]);
    const withKey = JSON.parse((await runCli(bare, ['profiles', '--detect'], { ANTHROPIC_API_KEY: 'k' })).stdout);
    assert.equal(withKey.map((p: any) => [p.runtime, p.authenticated]), [['claude', true], ['codex', false]]);
  } finally {
    bare.cleanup();
  }

  const written = await runCli(sb, ['profiles', '--detect', '--write']);
  assert.is(written.status, 0, written.stderr);
  const c = sb.readConfig();
  assert.equal(c.profiles.map((p: any) => p.id), ['claude', 'cx']);
  assert.is(c.profiles[1].env.OPENAI_API_KEY, 'sk-SECRET-VALUE', 'the configured profile lends its env to the proposal');
  assert.is(c.token, 'svc_rt_test_token_0123456789abcdef', 'other keys kept');
  assert.is(mode(sb.configPath), 0o600);

  const bad = await runCli(sb, ['profiles', '--write']);
  assert.is(bad.status, 2);
  assert.match(bad.stderr, /--write needs --detect/);
});

test('install-service linux: a systemd user unit that systemd-analyze accepts, restart on failure, never after 78', async () => {
  const r = await runCli(sb, ['install-service', '--platform', 'linux']);
  assert.is(r.status, 0, r.stderr);
  const unitPath = join(sb.env.XDG_CONFIG_HOME, 'systemd', 'user', 'svc-runner.service');
  const unit = readFileSync(unitPath, 'utf8');
  assert.match(unit, /^Restart=on-failure$/m);
  assert.match(unit, /^RestartSec=5$/m);
  assert.match(unit, /^RestartPreventExitStatus=78$/m);
  assert.match(unit, new RegExp(`^ExecStart="${process.execPath.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}" ".*svc-runner\\.mjs" run$`, 'm'));
  assert.match(unit, /^WantedBy=default.target$/m);
  assert.match(r.stdout, /systemctl --user daemon-reload && systemctl --user enable --now svc-runner.service/);
  const analyze = spawnSync('systemd-analyze', ['verify', unitPath], { encoding: 'utf8', env: { ...process.env, SYSTEMD_LOG_LEVEL: 'warning' } });
  if (analyze.error) {
    console.log(`  (systemd-analyze is not installed: the unit was not verified; .ci/run installs it)`);
  } else {
    // Only warnings about the unit itself count: a container without a user manager warns about that.
    const own = (analyze.stdout + analyze.stderr).split('\n').filter((l) => l.includes('svc-runner.service'));
    assert.equal(own, [], `systemd-analyze verify: ${analyze.stdout}${analyze.stderr}`);
  }
});

test('install-service darwin: a well-formed plist (KeepAlive on unsuccessful exit) and a wrapper that turns 78 into 0', async () => {
  const r = await runCli(sb, ['install-service', '--platform', 'darwin']);
  assert.is(r.status, 0, r.stderr);
  const plistPath = join(sb.home, 'Library', 'LaunchAgents', 'com.svc.runner.plist');
  const plist = readFileSync(plistPath, 'utf8');
  // Well-formed XML: xmllint when present, else the structure checked by hand below.
  const lint = spawnSync('xmllint', ['--noout', plistPath], { encoding: 'utf8' });
  if (!lint.error) assert.is(lint.status, 0, lint.stderr);
  assert.match(plist, /<key>Label<\/key>\s*<string>com\.svc\.runner<\/string>/);
  assert.match(plist, /<key>KeepAlive<\/key>\s*<dict>\s*<key>SuccessfulExit<\/key>\s*<false\/>\s*<\/dict>/);
  assert.match(plist, /<key>RunAtLoad<\/key>\s*<true\/>/);
  const wrapperPath = /<string>\/bin\/sh<\/string>\s*<string>([^<]+)<\/string>/.exec(plist)?.[1];
  assert.ok(wrapperPath && existsSync(wrapperPath), 'ProgramArguments runs the wrapper');
  assert.match(r.stdout, /launchctl bootstrap gui\/\$\(id -u\)/);

  // Run the wrapper with a fake node that exits with a chosen code: 78 → 0, 1 → 1, 0 → 0.
  const wrapper = readFileSync(wrapperPath!, 'utf8');
  const fakeNode = sb.fakeBin('fake-node', 'exit "$FAKE_EXIT"');
  const node = process.execPath.replace(/'/g, `'\\''`);
  const script = wrapper.replace(`'${node}'`, `'${fakeNode}'`);
  assert.is.not(script, wrapper, 'the wrapper starts node by its path');
  const testWrapper = join(sb.dir, 'wrapper.sh');
  writeFileSync(testWrapper, script, { mode: 0o700 });
  for (const [exit, expected] of [[78, 0], [1, 1], [0, 0]]) {
    const run = spawnSync('/bin/sh', [testWrapper], { env: { ...process.env, FAKE_EXIT: String(exit) } });
    assert.is(run.status, expected, `exit ${exit} → ${expected}`);
  }
});

test('install-service on another platform → exit 1 naming it; the bundle is where the unit points', async () => {
  const r = await runCli(sb, ['install-service'], { SVC_RUNNER_SERVICE_PLATFORM: 'win32' });
  assert.is(r.status, 1);
  assert.match(r.stderr, /not win32/);
  assert.match(execFileSync(process.execPath, [BUNDLE, 'version'], { encoding: 'utf8' }), /^\d+\.\d+\.\d+ /);
});

test.run();

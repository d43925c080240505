// `svc-runner profiles [--detect [--write]]` (spec: Runtime profile, Runner command line, Other
// behaviours) with the real bundle and fake `claude`/`codex` executables. The authentication rules
// (runner/profiles.ts; reference/agent-formats.md, named by the issue, does not exist, so these are
// the rules the runner implements and this file pins down):
//   claude — ANTHROPIC_API_KEY set (process env or the profile's env), or the credentials file
//            `$CLAUDE_CONFIG_DIR/.credentials.json`, CLAUDE_CONFIG_DIR defaulting to `~/.claude`;
//   codex  — OPENAI_API_KEY set, or `$CODEX_HOME/auth.json`, CODEX_HOME defaulting to `~/.codex`.
// A profile's env wins over the process env; a profile's `binary` is used instead of the PATH lookup.
import { mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { runCli, sandbox } from './_harness.ts';
import type { Sandbox } from './_harness.ts';

let sb: Sandbox;
test.before.each(() => {
  sb = sandbox();
});
test.after.each(() => sb.cleanup());

const mode = (p: string) => statSync(p).mode & 0o777;
const touch = (path: string) => {
  mkdirSync(join(path, '..'), { recursive: true });
  writeFileSync(path, '{}');
};
async function profiles(args: string[] = [], env: Record<string, string> = {}): Promise<any[]> {
  const r = await runCli(sb, ['profiles', ...args], env);
  assert.is(r.status, 0, r.stderr);
  return JSON.parse(r.stdout);
}
const authOf = (list: any[]) => Object.fromEntries(list.map((p) => [p.id, p.authenticated]));

test('no runner.json: `profiles` prints [] and `--detect` proposes nothing without binaries', async () => {
  assert.equal(await profiles(), []);
  assert.equal(await profiles(['--detect']), []);
});

test('`profiles`: each configured profile as JSON with authenticated, found, binaryPath, version; secret env values hidden', async () => {
  const claude = sb.fakeBin('claude', 'echo "2.0.14 (Claude Code)"');
  const configured = [
    { id: 'main', runtime: 'claude', env: { ANTHROPIC_API_KEY: 'sk-ant-SECRET', DISABLE_TELEMETRY: '1' }, args: ['--model', 'opus'] },
    { id: 'cx', runtime: 'codex', env: {}, args: [] },
  ];
  sb.writeConfig({ profiles: configured });
  const list = await profiles();
  assert.equal(list, [
    {
      id: 'main',
      runtime: 'claude',
      env: { ANTHROPIC_API_KEY: '[redacted]', DISABLE_TELEMETRY: '1' },
      args: ['--model', 'opus'],
      authenticated: true,
      found: true,
      binaryPath: claude,
      version: '2.0.14 (Claude Code)',
    },
    { id: 'cx', runtime: 'codex', env: {}, args: [], authenticated: false, found: false, binaryPath: null, version: null },
  ]);
  assert.equal(sb.readConfig().profiles, configured, 'listing changes nothing');
});

test('claude authentication: ANTHROPIC_API_KEY, ~/.claude/.credentials.json, or CLAUDE_CONFIG_DIR/.credentials.json', async () => {
  const dir = join(sb.dir, 'claude-config');
  const emptyDir = join(sb.dir, 'claude-empty');
  mkdirSync(emptyDir);
  sb.writeConfig({
    profiles: [
      { id: 'plain', runtime: 'claude', env: {}, args: [] },
      { id: 'key', runtime: 'claude', env: { ANTHROPIC_API_KEY: 'sk-ant-x' }, args: [] },
      { id: 'emptykey', runtime: 'claude', env: { ANTHROPIC_API_KEY: '' }, args: [] },
      { id: 'dir', runtime: 'claude', env: { CLAUDE_CONFIG_DIR: dir }, args: [] },
      { id: 'emptydir', runtime: 'claude', env: { CLAUDE_CONFIG_DIR: emptyDir }, args: [] },
    ],
  });
  assert.equal(authOf(await profiles()), { plain: false, key: true, emptykey: false, dir: false, emptydir: false });
  touch(join(dir, '.credentials.json'));
  assert.equal(authOf(await profiles()), { plain: false, key: true, emptykey: false, dir: true, emptydir: false });
  touch(join(sb.home, '.claude', '.credentials.json'));
  assert.equal(authOf(await profiles()), { plain: true, key: true, emptykey: true, dir: true, emptydir: false }, '~/.claude counts unless CLAUDE_CONFIG_DIR points elsewhere');
  assert.equal(authOf(await profiles([], { CLAUDE_CONFIG_DIR: emptyDir })), { plain: false, key: true, emptykey: false, dir: true, emptydir: false }, 'the process CLAUDE_CONFIG_DIR too');
  assert.equal(authOf(await profiles([], { CLAUDE_CONFIG_DIR: emptyDir, ANTHROPIC_API_KEY: 'sk' })), { plain: true, key: true, emptykey: false, dir: true, emptydir: true }, "the process key, unless the profile's env empties it");
});

test('codex authentication: OPENAI_API_KEY, ~/.codex/auth.json, or CODEX_HOME/auth.json (process or profile env)', async () => {
  const home = join(sb.dir, 'codex-home');
  mkdirSync(home);
  sb.writeConfig({
    profiles: [
      { id: 'plain', runtime: 'codex', env: {}, args: [] },
      { id: 'key', runtime: 'codex', env: { OPENAI_API_KEY: 'sk-x' }, args: [] },
      { id: 'home', runtime: 'codex', env: { CODEX_HOME: home }, args: [] },
      { id: 'claudekey', runtime: 'codex', env: { ANTHROPIC_API_KEY: 'sk-ant' }, args: [] },
    ],
  });
  assert.equal(authOf(await profiles()), { plain: false, key: true, home: false, claudekey: false });
  touch(join(home, 'auth.json'));
  assert.equal(authOf(await profiles()), { plain: false, key: true, home: true, claudekey: false });
  assert.equal(authOf(await profiles([], { CODEX_HOME: home })), { plain: true, key: true, home: true, claudekey: true });
  touch(join(sb.home, '.codex', 'auth.json'));
  assert.equal(authOf(await profiles()), { plain: true, key: true, home: true, claudekey: true }, 'the default ~/.codex');
  assert.equal(authOf(await profiles([], { CODEX_HOME: join(sb.dir, 'nowhere') })), { plain: false, key: true, home: true, claudekey: false });
  assert.equal(authOf(await profiles([], { OPENAI_API_KEY: 'sk', CODEX_HOME: join(sb.dir, 'nowhere') })), { plain: true, key: true, home: true, claudekey: true });
});

test("a profile's binary override is used: absolute path outside PATH, a name on PATH, a missing one", async () => {
  const elsewhere = join(sb.dir, 'opt', 'claude-nightly');
  mkdirSync(join(sb.dir, 'opt'));
  writeFileSync(elsewhere, '#!/bin/sh\necho "9.9.9 (nightly)"\n', { mode: 0o755 });
  const named = sb.fakeBin('claude-beta', 'echo "3.0.0-beta"');
  sb.writeConfig({
    profiles: [
      { id: 'abs', runtime: 'claude', binary: elsewhere, env: {}, args: [] },
      { id: 'named', runtime: 'claude', binary: 'claude-beta', env: {}, args: [] },
      { id: 'gone', runtime: 'codex', binary: '/nonexistent/codex', env: {}, args: [] },
      { id: 'relative', runtime: 'codex', binary: 'bin/codex', env: {}, args: [] },
    ],
  });
  sb.fakeBin('codex', 'echo "codex-cli 0.46.0"'); // on PATH, but the overrides name other files
  const list = await profiles();
  assert.equal(
    list.map((p) => [p.id, p.binary, p.found, p.binaryPath, p.version]),
    [
      ['abs', elsewhere, true, elsewhere, '9.9.9 (nightly)'],
      ['named', 'claude-beta', true, named, '3.0.0-beta'],
      ['gone', '/nonexistent/codex', false, null, null],
      ['relative', 'bin/codex', false, null, null],
    ],
  );

  // Detection: no `claude` on PATH, yet the configured override is found and proposed with its id;
  // a codex override that is gone falls back to `codex` on PATH.
  const proposal = await profiles(['--detect']);
  assert.equal(
    proposal.map((p) => [p.id, p.runtime, p.binary ?? null, p.binaryPath, p.version]),
    [
      ['abs', 'claude', elsewhere, elsewhere, '9.9.9 (nightly)'],
      ['gone', 'codex', null, join(sb.bin, 'codex'), 'codex-cli 0.46.0'],
    ],
  );
});

test('`--detect` proposes without changing runner.json; `--detect --write` replaces profiles, keeps other keys, 0600', async () => {
  sb.fakeBin('claude', 'echo "2.0.14 (Claude Code)"');
  sb.fakeBin('codex', 'echo "codex-cli 0.46.0"');
  const config = {
    server: 'http://127.0.0.1:9',
    runnerId: 'runner-1',
    token: 'svc_rt_SECRET_TOKEN_0123456789',
    profiles: [
      { id: 'cx', runtime: 'codex', env: { OPENAI_API_KEY: 'sk-SECRET', CODEX_HOME: '/srv/codex' }, args: ['--full-auto'] },
      { id: 'old', runtime: 'claude', binary: '/nonexistent/claude', env: {}, args: [] },
      { id: 'second-cx', runtime: 'codex', env: {}, args: [] },
    ],
    projects: [{ id: 'p1', root: '/srv/p1' }],
    fleet: { pollSeconds: 30 },
  };
  sb.writeConfig(config);
  writeFileSync(sb.configPath, readFileSync(sb.configPath), { mode: 0o644 });
  const before = readFileSync(sb.configPath, 'utf8');
  const mtime = statSync(sb.configPath).mtimeMs;

  const r = await runCli(sb, ['profiles', '--detect'], { ANTHROPIC_API_KEY: 'sk-ant' });
  assert.is(r.status, 0, r.stderr);
  const proposal = JSON.parse(r.stdout);
  assert.equal(
    proposal.map((p: any) => [p.id, p.runtime, p.authenticated, p.version]),
    [
      ['old', 'claude', true, '2.0.14 (Claude Code)'],
      ['cx', 'codex', true, 'codex-cli 0.46.0'],
    ],
  );
  assert.not.match(r.stdout + r.stderr, /SECRET/, 'env values that look secret are hidden');
  assert.is(readFileSync(sb.configPath, 'utf8'), before, '--detect changes nothing');
  assert.is(statSync(sb.configPath).mtimeMs, mtime);

  const w = await runCli(sb, ['profiles', '--detect', '--write']);
  assert.is(w.status, 0, w.stderr);
  assert.match(w.stderr, /Wrote 2 profiles to /);
  const after = sb.readConfig();
  assert.equal(after.profiles, [
    { id: 'old', runtime: 'claude', env: {}, args: [] },
    { id: 'cx', runtime: 'codex', env: { OPENAI_API_KEY: 'sk-SECRET', CODEX_HOME: '/srv/codex' }, args: ['--full-auto'] },
  ]);
  const { profiles: _a, ...rest } = after;
  const { profiles: _b, ...restBefore } = config;
  assert.equal(rest, restBefore, 'server, runnerId, token, projects, fleet kept');
  assert.is(mode(sb.configPath), 0o600);
});

test('`--write` without `--detect` → exit 2 with usage, nothing written; other bad options too', async () => {
  sb.writeConfig({ profiles: [] });
  const before = readFileSync(sb.configPath, 'utf8');
  for (const args of [['--write'], ['--write', '--no-detect'], ['--detect=yes'], ['--bogus'], ['extra']]) {
    const r = await runCli(sb, ['profiles', ...args]);
    assert.is(r.status, 2, `${args.join(' ')}: ${r.stderr}`);
    assert.match(r.stderr, /Usage: svc-runner <command>/);
    assert.is(r.stdout, '');
  }
  assert.match((await runCli(sb, ['profiles', '--write'])).stderr, /--write needs --detect/);
  assert.is(readFileSync(sb.configPath, 'utf8'), before);
});

test('an invalid runner.json → exit 1 naming the field; --detect --write does not overwrite it', async () => {
  sb.fakeBin('claude', 'echo 1');
  sb.writeConfig({ profiles: [{ id: 'bad id!', runtime: 'claude', env: {}, args: [] }] });
  const before = readFileSync(sb.configPath, 'utf8');
  for (const args of [[], ['--detect'], ['--detect', '--write']]) {
    const r = await runCli(sb, ['profiles', ...args]);
    assert.is(r.status, 1, r.stderr);
    assert.match(r.stderr, /profiles\.0\.id/);
    assert.not.match(r.stderr, /bad id!/);
  }
  assert.is(readFileSync(sb.configPath, 'utf8'), before);
});

test('--detect --write where runner.json cannot be written → exit 1 with one line naming the file and why, no stack trace', async () => {
  sb.fakeBin('claude', 'echo 1.0.0');
  const notADir = join(sb.dir, 'a-file');
  writeFileSync(notADir, '');
  const r = await runCli(sb, ['profiles', '--detect', '--write'], { XDG_CONFIG_HOME: notADir });
  assert.is(r.status, 1, r.stderr);
  assert.equal(JSON.parse(r.stdout).map((p: { runtime: string }) => p.runtime), ['claude'], 'the proposal is still printed');
  assert.is(r.stderr, `svc-runner: ${join(notADir, 'svc', 'runner.json')} could not be written: ENOTDIR: not a directory, mkdir '${join(notADir, 'svc')}'\n`);
});

test.run();

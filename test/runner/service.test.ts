// `svc-runner install-service` (spec: Runner command line, Runner exit codes, Runner state directory)
// with the real bundle. Linux: the systemd user unit at $XDG_CONFIG_HOME/systemd/user/svc-runner.service,
// checked by `systemd-analyze verify --user` (installed by .ci/run) — restart after 5 s on failure,
// never after exit 78. macOS: ~/Library/LaunchAgents/com.svc.runner.plist, parsed as XML by a strict
// little plist reader below (plutil only exists on macOS; no npm dependency for this), and its shell
// wrapper actually run with a fake node: 78 becomes 0 (launchd then leaves it stopped), other codes
// pass through, and a TERM is forwarded with the child's own exit code returned. `uninstall-service`
// prints the stop command first, removes exactly those files (never runner.json or the state
// directory), is idempotent, and a file it cannot remove is exit 1 with one line.
// needs: systemd-analyze
import { spawn, spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, realpathSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { BUNDLE, runCli, sandbox, waitUntil } from './_harness.ts';
import type { Sandbox } from './_harness.ts';

let sb: Sandbox;
test.before.each(() => {
  sb = sandbox();
});
test.after.each(() => sb.cleanup());

const mode = (p: string) => statSync(p).mode & 0o777;
/** `systemd-analyze --user` needs a runtime directory, which a container or CI job may not have. */
const runtimeDir = () => {
  const dir = join(sb.dir, 'run');
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  return dir;
};
const esc = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

// ---- a strict reader for the plist subset launchd uses (throws on anything malformed) ----
type PlistValue = string | number | boolean | PlistValue[] | { [k: string]: PlistValue };
interface XmlNode {
  name: string;
  children: XmlNode[];
  text: string;
}
const ENTITIES: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'" };
function decode(text: string): string {
  return text.replace(/&([a-z]+);|&/g, (m, name) => {
    if (!name || !(name in ENTITIES)) throw new Error(`bad entity near ${JSON.stringify(m)}`);
    return ENTITIES[name];
  });
}
function parseXml(src: string): XmlNode {
  let s = src.replace(/^<\?xml version="1\.0" encoding="UTF-8"\?>\s*/, '');
  if (s === src) throw new Error('missing XML declaration');
  s = s.replace(/^<!DOCTYPE plist PUBLIC "-\/\/Apple\/\/DTD PLIST 1\.0\/\/EN" "http:\/\/www\.apple\.com\/DTDs\/PropertyList-1\.0\.dtd">\s*/, '');
  const root: XmlNode = { name: '#root', children: [], text: '' };
  const stack = [root];
  const token = /<(\/?)([A-Za-z]+)((?:\s+[a-z]+="[^"<&]*")*)\s*(\/?)>|([^<]+)/gy;
  let m: RegExpExecArray | null;
  while (token.lastIndex < s.length) {
    const at = token.lastIndex;
    if (!(m = token.exec(s))) throw new Error(`malformed XML at offset ${at}: ${JSON.stringify(s.slice(at, at + 40))}`);
    const [, close, name, , selfClose, text] = m;
    const top = stack[stack.length - 1];
    if (text !== undefined) {
      if (text.includes('>')) throw new Error('stray > in text');
      top.text += decode(text);
    } else if (close) {
      if (top.name !== name) throw new Error(`</${name}> closes <${top.name}>`);
      stack.pop();
    } else {
      const node: XmlNode = { name, children: [], text: '' };
      top.children.push(node);
      if (!selfClose) stack.push(node);
    }
  }
  if (stack.length !== 1) throw new Error(`unclosed <${stack[stack.length - 1].name}>`);
  if (root.children.length !== 1 || root.children[0].name !== 'plist' || root.text.trim()) throw new Error('one <plist> root expected');
  return root.children[0];
}
function plistValue(n: XmlNode): PlistValue {
  const leaf = () => {
    if (n.children.length) throw new Error(`<${n.name}> must hold text only`);
    return n.text;
  };
  const container = () => {
    if (n.text.trim()) throw new Error(`text inside <${n.name}>`);
    return n.children;
  };
  switch (n.name) {
    case 'string':
      return leaf();
    case 'integer': {
      const t = leaf();
      if (!/^-?\d+$/.test(t)) throw new Error(`bad integer ${t}`);
      return Number(t);
    }
    case 'true':
    case 'false':
      if (n.children.length || n.text) throw new Error(`<${n.name}/> must be empty`);
      return n.name === 'true';
    case 'array':
      return container().map(plistValue);
    case 'dict': {
      const kids = container();
      const out: Record<string, PlistValue> = {};
      for (let i = 0; i < kids.length; i += 2) {
        if (kids[i].name !== 'key' || !kids[i + 1]) throw new Error('a dict holds <key> and value pairs');
        const key = kids[i].text;
        if (key in out) throw new Error(`duplicate key ${key}`);
        out[key] = plistValue(kids[i + 1]);
      }
      return out;
    }
  }
  throw new Error(`unexpected <${n.name}>`);
}
function parsePlist(src: string): Record<string, PlistValue> {
  const plist = parseXml(src);
  if (plist.children.length !== 1 || plist.text.trim()) throw new Error('<plist> holds one value');
  return plistValue(plist.children[0]) as Record<string, PlistValue>;
}

test('the plist reader is strict: it refuses what launchd would refuse', () => {
  const wrap = (body: string) =>
    `<?xml version="1.0" encoding="UTF-8"?>\n<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">\n<plist version="1.0">${body}</plist>\n`;
  assert.equal(parsePlist(wrap('<dict><key>a</key><string>x &amp; y</string><key>b</key><array><true/><integer>3</integer></array></dict>')), { a: 'x & y', b: [true, 3] });
  for (const bad of ['<dict><key>a</key><string>x & y</string></dict>', '<dict><key>a</key><string>x</dict>', '<dict><key>a</key></dict>', '<dict><string>x</string><string>y</string></dict>', '<dict><key>a</key><integer>1.5</integer></dict>']) {
    assert.throws(() => parsePlist(wrap(bad)), undefined, bad);
  }
});

test('linux: a systemd user unit that `systemd-analyze verify --user` accepts; restart on failure after 5 s, never after 78; prints how to start it', async () => {
  // A state directory with characters systemd would otherwise expand (%, $) and a space.
  const state = join(sb.dir, 'state 100%x $HOME');
  const env = { XDG_STATE_HOME: state };
  const r = await runCli(sb, ['install-service', '--platform', 'linux'], env);
  assert.is(r.status, 0, r.stderr);
  const unitPath = join(sb.env.XDG_CONFIG_HOME, 'systemd', 'user', 'svc-runner.service');
  assert.match(r.stdout, new RegExp(`^Wrote ${esc(unitPath)}$`, 'm'));
  assert.match(r.stdout, /^ {2}systemctl --user daemon-reload && systemctl --user enable --now svc-runner\.service$/m);
  assert.is(mode(unitPath), 0o644);
  const unit = readFileSync(unitPath, 'utf8');
  const lines = unit.split('\n');
  const service = lines.slice(lines.indexOf('[Service]'), lines.indexOf('[Install]'));
  assert.ok(service.length > 1, 'a [Service] section');
  for (const want of ['Restart=on-failure', 'RestartSec=5', 'RestartPreventExitStatus=78', 'Type=simple']) assert.ok(service.includes(want), want);
  assert.ok(lines.includes('WantedBy=default.target'));
  assert.ok(service.includes(`ExecStart="${process.execPath}" "${realpathSync(BUNDLE)}" run`), `ExecStart runs node with the bundle: ${unit}`);
  assert.ok(service.includes(`Environment="XDG_CONFIG_HOME=${sb.env.XDG_CONFIG_HOME}"`), 'the service reads the same runner.json');
  assert.ok(service.includes(`Environment="XDG_STATE_HOME=${state.replace('%', '%%')}"`), '% is escaped, $ is not expanded in Environment=');
  assert.ok(service.includes(`Environment="PATH=${sb.env.PATH}"`), 'PATH pinned (claude, codex, git)');

  const analyze = spawnSync('systemd-analyze', ['verify', '--user', unitPath], {
    encoding: 'utf8',
    env: { ...sb.env, XDG_RUNTIME_DIR: runtimeDir(), SYSTEMD_LOG_LEVEL: 'notice' },
  });
  if (analyze.error) {
    console.log('  (systemd-analyze is not installed: the unit was NOT verified; .ci/run installs the `systemd` package)');
  } else {
    assert.is(analyze.status, 0, `systemd-analyze verify --user:\n${analyze.stdout}${analyze.stderr}`);
    // Only lines about the unit count: a machine without a user manager may add notices of its own.
    const own = (analyze.stdout + analyze.stderr).split('\n').filter((l) => l.includes('svc-runner'));
    assert.equal(own, [], 'no warning about the unit');
  }

  // Installing again rewrites the same file.
  const again = await runCli(sb, ['install-service', '--platform', 'linux'], env);
  assert.is(again.status, 0, again.stderr);
  assert.is(readFileSync(unitPath, 'utf8'), unit);
});

test('systemd-analyze catches a broken unit (so the check above means something)', () => {
  const bad = join(sb.dir, 'broken.service');
  writeFileSync(bad, '[Service]\nExecStart=relative/path run\nRestart=sometimes\n');
  const r = spawnSync('systemd-analyze', ['verify', '--user', bad], { encoding: 'utf8', env: { ...sb.env, XDG_RUNTIME_DIR: runtimeDir() } });
  if (r.error) return console.log('  (systemd-analyze is not installed: skipped)');
  assert.ok(r.status !== 0 || /sometimes|relative/.test(r.stdout + r.stderr), r.stdout + r.stderr);
});

test('darwin: a well-formed plist (label, wrapper, KeepAlive on unsuccessful exit, env, log path that exists) and how to start it', async () => {
  const r = await runCli(sb, ['install-service', '--platform', 'darwin']);
  assert.is(r.status, 0, r.stderr);
  const plistPath = join(sb.home, 'Library', 'LaunchAgents', 'com.svc.runner.plist');
  const wrapperPath = join(sb.env.XDG_CONFIG_HOME, 'svc', 'svc-runner-launchd.sh');
  const logPath = join(sb.env.XDG_STATE_HOME, 'svc', 'runner.log');
  assert.match(r.stdout, new RegExp(`^Wrote ${esc(plistPath)}$`, 'm'));
  assert.match(r.stdout, new RegExp(`launchctl bootstrap gui/\\$\\(id -u\\) '${esc(plistPath)}'`));
  assert.equal([mode(plistPath), mode(wrapperPath)], [0o644, 0o700]);

  const lint = spawnSync('plutil', ['-lint', plistPath], { encoding: 'utf8' });
  if (!lint.error) assert.is(lint.status, 0, lint.stdout + lint.stderr);
  const plist = parsePlist(readFileSync(plistPath, 'utf8'));
  assert.equal(plist, {
    Label: 'com.svc.runner',
    ProgramArguments: ['/bin/sh', wrapperPath],
    RunAtLoad: true,
    KeepAlive: { SuccessfulExit: false },
    ThrottleInterval: 10,
    EnvironmentVariables: { PATH: sb.env.PATH, HOME: sb.home, XDG_CONFIG_HOME: sb.env.XDG_CONFIG_HOME, XDG_STATE_HOME: sb.env.XDG_STATE_HOME },
    StandardOutPath: logPath,
    StandardErrorPath: logPath,
  });
  assert.ok(existsSync(dirname(logPath)), 'launchd does not create the log directory itself');
});

test('darwin: values with XML characters are escaped', async () => {
  const home = join(sb.dir, 'h<&>"');
  mkdirSync(home);
  const r = await runCli(sb, ['install-service', '--platform', 'darwin'], { HOME: home });
  assert.is(r.status, 0, r.stderr);
  const plist = parsePlist(readFileSync(join(home, 'Library', 'LaunchAgents', 'com.svc.runner.plist'), 'utf8'));
  assert.is((plist.EnvironmentVariables as Record<string, string>).HOME, home);
});

/** The installed wrapper with node replaced by a fake that records its arguments and exits as told. */
async function wrapperWithFakeNode(): Promise<{ script: string; argsFile: string }> {
  const r = await runCli(sb, ['install-service', '--platform', 'darwin']);
  assert.is(r.status, 0, r.stderr);
  const installed = readFileSync(join(sb.env.XDG_CONFIG_HOME, 'svc', 'svc-runner-launchd.sh'), 'utf8');
  const argsFile = join(sb.dir, 'node-args');
  const fakeNode = sb.fakeBin(
    'fake-node',
    `printf '%s\\n' "$@" > '${argsFile}'
if [ -n "$WAIT_FOR_TERM" ]; then
  trap 'exit "$FAKE_EXIT"' TERM
  : > '${argsFile}.ready'
  while :; do sleep 1 & wait $!; done
fi
exit "$FAKE_EXIT"`,
  );
  const quoted = `'${process.execPath.replace(/'/g, `'\\''`)}'`;
  assert.ok(installed.includes(`${quoted} '${realpathSync(BUNDLE)}' run &`), `the wrapper starts node with the bundle:\n${installed}`);
  const script = join(sb.dir, 'wrapper.sh');
  writeFileSync(script, installed.replace(quoted, `'${fakeNode}'`), { mode: 0o700 });
  return { script, argsFile };
}

test('darwin wrapper: exit 78 → 0, 1 → 1, 0 → 0, 2 → 2; node gets the bundle and `run`', async () => {
  const { script, argsFile } = await wrapperWithFakeNode();
  for (const [exit, expected] of [
    [78, 0],
    [1, 1],
    [0, 0],
    [2, 2],
  ]) {
    const run = spawnSync('/bin/sh', [script], { env: { ...sb.env, FAKE_EXIT: String(exit) }, encoding: 'utf8' });
    assert.is(run.status, expected, `node exits ${exit} → the wrapper exits ${expected}`);
  }
  assert.equal(readFileSync(argsFile, 'utf8').split('\n'), [realpathSync(BUNDLE), 'run', '']);
});

test('darwin wrapper: TERM is forwarded to node and the wrapper ends with node\'s own code (78 → 0), every time', async () => {
  const { script, argsFile } = await wrapperWithFakeNode();
  for (let i = 0; i < 6; i++) {
    for (const [exit, expected] of [
      [0, 0],
      [78, 0],
      [1, 1],
    ]) {
      const ready = `${argsFile}.ready`;
      const child = spawn('/bin/sh', [script], { env: { ...sb.env, FAKE_EXIT: String(exit), WAIT_FOR_TERM: '1' }, stdio: 'ignore' });
      const done = new Promise<number | null>((r) => child.on('close', (code) => r(code)));
      await waitUntil(() => existsSync(ready), 5000, 'the fake node to start');
      child.kill('SIGTERM');
      assert.is(await done, expected, `round ${i}: node exits ${exit} on TERM → the wrapper exits ${expected}`);
      spawnSync('rm', ['-f', ready]);
    }
  }
});

test('a directory where the service file goes → exit 1 with a one-line reason, no temp file left behind', async () => {
  const unitDir = join(sb.env.XDG_CONFIG_HOME, 'systemd', 'user');
  mkdirSync(join(unitDir, 'svc-runner.service'), { recursive: true });
  const r = await runCli(sb, ['install-service', '--platform', 'linux']);
  assert.is(r.status, 1);
  assert.is(r.stderr, `svc-runner: install-service: cannot write ${join(unitDir, 'svc-runner.service')}: EISDIR\n`);
  assert.is(r.stdout, '');
  assert.equal(readdirSync(unitDir), ['svc-runner.service']);

  const agents = join(sb.home, 'Library', 'LaunchAgents');
  mkdirSync(join(agents, 'com.svc.runner.plist'), { recursive: true });
  const d = await runCli(sb, ['install-service', '--platform', 'darwin']);
  assert.is(d.status, 1);
  assert.match(d.stderr, /^svc-runner: install-service: cannot write .*com\.svc\.runner\.plist: EISDIR\n$/);
  assert.equal(readdirSync(agents), ['com.svc.runner.plist']);
});

/** stdout lines, to check what is printed and in which order. */
const outLines = (s: string) => s.trimEnd().split('\n');

test('uninstall-service (linux) after install-service: prints the stop command first, removes the unit, keeps runner.json and the state dir; again → nothing to remove, exit 0', async () => {
  sb.writeConfig({ otlp: { enabled: false } });
  const unitPath = join(sb.env.XDG_CONFIG_HOME, 'systemd', 'user', 'svc-runner.service');
  assert.is((await runCli(sb, ['install-service', '--platform', 'linux'])).status, 0);
  const stateDir = join(sb.env.XDG_STATE_HOME, 'svc');
  mkdirSync(stateDir, { recursive: true });
  const r = await runCli(sb, ['uninstall-service', '--platform', 'linux']);
  assert.is(r.status, 0, r.stderr);
  assert.is(r.stderr, '');
  assert.equal(outLines(r.stdout), [
    'Stop and disable the service (if it runs) with:',
    '  systemctl --user disable --now svc-runner.service',
    `Removed ${unitPath}`,
    'Then let systemd forget the unit: systemctl --user daemon-reload',
    'runner.json and the state directory are kept.',
  ]);
  assert.not.ok(existsSync(unitPath));
  assert.ok(existsSync(sb.configPath) && existsSync(stateDir), 'runner.json and the state directory are untouched');
  assert.equal(sb.readConfig(), { otlp: { enabled: false } });

  const again = await runCli(sb, ['uninstall-service', '--platform', 'linux']);
  assert.is(again.status, 0, again.stderr);
  assert.is(again.stdout, `Nothing to remove: ${unitPath} does not exist.\n`);
});

test('uninstall-service --platform darwin after install-service: bootout first, then the plist and the wrapper are removed; the log directory stays; idempotent', async () => {
  const plistPath = join(sb.home, 'Library', 'LaunchAgents', 'com.svc.runner.plist');
  const wrapperPath = join(sb.env.XDG_CONFIG_HOME, 'svc', 'svc-runner-launchd.sh');
  assert.is((await runCli(sb, ['install-service', '--platform', 'darwin'])).status, 0);
  const r = await runCli(sb, ['uninstall-service', '--platform', 'darwin']);
  assert.is(r.status, 0, r.stderr);
  assert.equal(outLines(r.stdout), [
    'Stop and disable the service (if it runs) with:',
    '  launchctl bootout gui/$(id -u)/com.svc.runner',
    `Removed ${plistPath}`,
    `Removed ${wrapperPath}`,
    'runner.json and the state directory are kept.',
  ]);
  assert.not.ok(existsSync(plistPath) || existsSync(wrapperPath));
  assert.ok(existsSync(join(sb.env.XDG_STATE_HOME, 'svc')), 'the state directory (the launchd log) is kept');
  const again = await runCli(sb, ['uninstall-service', '--platform', 'darwin']);
  assert.is(again.status, 0);
  assert.is(again.stdout, `Nothing to remove: ${plistPath} and ${wrapperPath} do not exist.\n`);

  // Only the wrapper left (the plist removed by hand): that one is removed, the other named as absent.
  assert.is((await runCli(sb, ['install-service', '--platform', 'darwin'])).status, 0);
  rmSync(plistPath);
  const half = await runCli(sb, ['uninstall-service', '--platform', 'darwin']);
  assert.is(half.status, 0);
  assert.match(half.stdout, new RegExp(`^Removed ${esc(wrapperPath)}\nNot there \\(nothing to remove\\): ${esc(plistPath)}$`, 'm'));
  assert.not.ok(existsSync(wrapperPath));
});

test('uninstall-service with a directory where the unit is → exit 1 with one clear line, no stack trace; the directory is left alone', async () => {
  const unitPath = join(sb.env.XDG_CONFIG_HOME, 'systemd', 'user', 'svc-runner.service');
  mkdirSync(join(unitPath, 'inside'), { recursive: true });
  const r = await runCli(sb, ['uninstall-service', '--platform', 'linux']);
  assert.is(r.status, 1);
  assert.is(r.stderr, `svc-runner: uninstall-service: cannot remove ${unitPath}: EISDIR\n`);
  assert.match(r.stdout, /^Stop and disable the service \(if it runs\) with:\n {2}systemctl --user disable --now svc-runner\.service\n/);
  assert.not.match(r.stdout, /daemon-reload|Removed/);
  assert.ok(existsSync(join(unitPath, 'inside')));

  // darwin: the plist blocked, the wrapper still removed; exit 1.
  assert.is((await runCli(sb, ['install-service', '--platform', 'darwin'])).status, 0);
  const plistPath = join(sb.home, 'Library', 'LaunchAgents', 'com.svc.runner.plist');
  rmSync(plistPath);
  mkdirSync(plistPath);
  const d = await runCli(sb, ['uninstall-service', '--platform', 'darwin']);
  assert.is(d.status, 1);
  assert.is(d.stderr, `svc-runner: uninstall-service: cannot remove ${plistPath}: EISDIR\n`);
  assert.match(d.stdout, /^Removed .*svc-runner-launchd\.sh$/m);
});

test('uninstall-service with a read-only parent directory → exit 1 with one clear line (skipped as root, who may write anyway)', async () => {
  if (process.getuid?.() === 0) return console.log('  (running as root: a read-only directory does not stop root; skipped)');
  const unitDir = join(sb.env.XDG_CONFIG_HOME, 'systemd', 'user');
  assert.is((await runCli(sb, ['install-service', '--platform', 'linux'])).status, 0);
  chmodSync(unitDir, 0o555);
  try {
    const r = await runCli(sb, ['uninstall-service', '--platform', 'linux']);
    assert.is(r.status, 1);
    assert.is(r.stderr, `svc-runner: uninstall-service: cannot remove ${join(unitDir, 'svc-runner.service')}: EACCES\n`);
  } finally {
    chmodSync(unitDir, 0o755);
  }
});

test('uninstall-service: another platform → exit 1 naming it; an unknown --platform → exit 2 with usage', async () => {
  const other = await runCli(sb, ['uninstall-service'], { SVC_RUNNER_SERVICE_PLATFORM: 'win32' });
  assert.is(other.status, 1);
  assert.match(other.stderr, /uninstall-service supports Linux \(systemd\) and macOS \(launchd\), not win32/);
  const bad = await runCli(sb, ['uninstall-service', '--platform', 'freebsd']);
  assert.is(bad.status, 2);
  assert.match(bad.stderr, /uninstall-service: --platform is linux or darwin/);
});

test('another platform → exit 1 naming it; an unknown --platform → exit 2 with usage', async () => {
  const other = await runCli(sb, ['install-service'], { SVC_RUNNER_SERVICE_PLATFORM: 'win32' });
  assert.is(other.status, 1);
  assert.match(other.stderr, /supports Linux \(systemd\) and macOS \(launchd\), not win32/);
  const bad = await runCli(sb, ['install-service', '--platform', 'freebsd']);
  assert.is(bad.status, 2);
  assert.match(bad.stderr, /--platform is linux or darwin/);
  assert.match(bad.stderr, /Usage: svc-runner/);
  assert.not.ok(existsSync(join(sb.env.XDG_CONFIG_HOME, 'systemd')) || existsSync(join(sb.home, 'Library')), 'nothing written');
});

test.run();

// `svc-runner install-service` (spec: Runner command line, Runner exit codes, Runner state directory):
// a systemd user unit on Linux, a launchd agent on macOS, both starting `<node> <this bundle> run`.
// `svc-runner uninstall-service` removes exactly those files again (never runner.json or the state
// directory) after printing how to stop and disable the running service; it stops nothing itself.
//   systemd: Restart=on-failure, RestartSec=5, RestartPreventExitStatus=78 — a crash or an unreachable
//     server (exit 1) restarts after 5 s; a final close by the server (78) does not.
//   launchd: KeepAlive restarts on an unsuccessful exit only (SuccessfulExit=false); a small wrapper
//     script turns exit 78 into 0 so launchd leaves it stopped.
// The environment the runner needs is pinned in the service: PATH (to find claude/codex, git) and the
// XDG directories, so the service reads the same runner.json as this command did.
// `--platform linux|darwin` (or SVC_RUNNER_SERVICE_PLATFORM) chooses the kind, for tests.
import { spawnSync } from 'node:child_process';
import { chmodSync, lstatSync, mkdirSync, realpathSync, unlinkSync } from 'node:fs';
import { dirname, isAbsolute, resolve } from 'node:path';
import { writeFileAtomic } from './config.ts';
import { launchdLogPath, launchdPlistPath, launchdWrapperPath, systemdUnitPath } from './paths.ts';
import type { Env } from './paths.ts';

type Out = { write: (s: string) => unknown };

export interface ServiceTarget {
  node: string;
  bundle: string;
  env: Env;
}

/** The environment pinned in the service file. */
function pinnedEnv(env: Env): [string, string][] {
  return (['PATH', 'HOME', 'XDG_CONFIG_HOME', 'XDG_STATE_HOME', 'CODEX_HOME', 'CLAUDE_CONFIG_DIR'] as const)
    .filter((k) => env[k] && (k === 'PATH' || isAbsolute(env[k]!)))
    .map((k) => [k, env[k]!]);
}

/** systemd quoting: one word in double quotes, `\\` and `"` escaped, `%` doubled (specifiers), and in
 *  command lines `$` doubled (variable expansion; Environment= does not expand). */
const sdQuote = (s: string, command: boolean) =>
  `"${s.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/%/g, '%%').replace(/\$/g, command ? '$$$$' : '$')}"`;
const sdWord = (s: string) => sdQuote(s, true);
const sdEnv = (k: string, v: string) => `Environment=${sdQuote(`${k}=${v}`, false)}`;

export function systemdUnit(t: ServiceTarget): string {
  return [
    '# Written by `svc-runner install-service`. Exit 78 means the server closed the connection for good',
    '# (token revoked, runner re-paired elsewhere, protocol mismatch): not restarted, fix and start again.',
    '[Unit]',
    'Description=svc runner: agent machine daemon',
    '',
    '[Service]',
    'Type=simple',
    `ExecStart=${[t.node, t.bundle].map(sdWord).join(' ')} run`,
    ...pinnedEnv(t.env).map(([k, v]) => sdEnv(k, v)),
    'Restart=on-failure',
    'RestartSec=5',
    'RestartPreventExitStatus=78',
    'KillSignal=SIGTERM',
    'TimeoutStopSec=20',
    '',
    '[Install]',
    'WantedBy=default.target',
    '',
  ].join('\n');
}

const sh = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;

/** The 78 → 0 wrapper of the service managers that restart on an unsuccessful exit (launchd here, a
 *  package manager's service in runner/packaging/): runs the daemon, forwards TERM/INT, turns exit 78
 *  into 0. A trapped signal makes `wait` return early (status > 128) before the child has exited: then
 *  it waits again, so the wrapper always ends with the child's own code (the shell keeps a reaped
 *  child's status for `wait`). `header` is its comment lines, after the `#!` line. */
export function exitWrapper(t: ServiceTarget, header: string[]): string {
  return `#!/bin/sh
${header.map((l) => `# ${l}`.trimEnd()).join('\n')}
child=
woken=
trap 'woken=1; [ -z "$child" ] || kill -TERM "$child" 2>/dev/null' TERM INT
${sh(t.node)} ${sh(t.bundle)} run &
child=$!
[ -z "$woken" ] || kill -TERM "$child" 2>/dev/null
while :; do
  woken=
  wait "$child"
  code=$?
  if [ -z "$woken" ] || [ "$code" -le 128 ]; then break; fi
done
if [ "$code" -eq 78 ]; then exit 0; fi
exit "$code"
`;
}

/** The launchd wrapper (see exitWrapper). */
export const launchdWrapper = (t: ServiceTarget): string =>
  exitWrapper(t, [
    'Written by `svc-runner install-service`. launchd restarts the runner when it exits unsuccessfully;',
    'exit 78 (the server closed the connection for good) must not restart it, so it becomes 0 here.',
  ]);

const xml = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');

export function launchdPlist(t: ServiceTarget): string {
  const envEntries = pinnedEnv(t.env)
    .map(([k, v]) => `      <key>${xml(k)}</key>\n      <string>${xml(v)}</string>`)
    .join('\n');
  return `<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
<plist version="1.0">
  <dict>
    <key>Label</key>
    <string>com.svc.runner</string>
    <key>ProgramArguments</key>
    <array>
      <string>/bin/sh</string>
      <string>${xml(launchdWrapperPath(t.env))}</string>
    </array>
    <key>RunAtLoad</key>
    <true/>
    <key>KeepAlive</key>
    <dict>
      <key>SuccessfulExit</key>
      <false/>
    </dict>
    <key>ThrottleInterval</key>
    <integer>10</integer>
    <key>EnvironmentVariables</key>
    <dict>
${envEntries}
    </dict>
    <key>StandardOutPath</key>
    <string>${xml(launchdLogPath(t.env))}</string>
    <key>StandardErrorPath</key>
    <string>${xml(launchdLogPath(t.env))}</string>
  </dict>
</plist>
`;
}

export function serviceTarget(env: Env): ServiceTarget {
  const script = process.argv[1] ? resolve(process.argv[1]) : '';
  let bundle = script;
  try {
    bundle = realpathSync(script);
  } catch {}
  return { node: process.execPath, bundle, env };
}

/** Do one file system step of (un)installing; a failure (say, a directory in the way) is reported, not thrown. */
function step(err: Out, what: string, path: string, action: () => void, command = 'install-service'): boolean {
  try {
    action();
    return true;
  } catch (e) {
    err.write(`svc-runner: ${command}: cannot ${what} ${path}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}\n`);
    return false;
  }
}
const writeServiceFile = (path: string, text: string, mode: number, err: Out) =>
  step(err, 'write', path, () => {
    writeFileAtomic(path, text);
    chmodSync(path, mode);
  });

export function installService(platform: string, env: Env, out: Out, err: Out): number {
  const t = serviceTarget(env);
  if (platform === 'linux') {
    const path = systemdUnitPath(env);
    if (!writeServiceFile(path, systemdUnit(t), 0o644, err)) return 1;
    out.write(`Wrote ${path}\nStart it now and at every login with:\n  systemctl --user daemon-reload && systemctl --user enable --now svc-runner.service\n`);
    out.write('To keep it running while you are logged out: loginctl enable-linger "$USER"\nLogs: journalctl --user -u svc-runner -f\n');
    const missing = userSystemdMissing(env);
    if (missing) out.write(noUserSystemd(missing, path, t));
    return 0;
  }
  if (platform === 'darwin') {
    const wrapper = launchdWrapperPath(env);
    if (!writeServiceFile(wrapper, launchdWrapper(t), 0o700, err)) return 1;
    // launchd opens StandardOutPath itself and does not create its directory: without it the job
    // cannot start at all (before the runner has ever run, the state directory may not exist yet).
    const logDir = dirname(launchdLogPath(env));
    if (!step(err, 'create', logDir, () => mkdirSync(logDir, { recursive: true, mode: 0o700 }))) return 1;
    const plist = launchdPlistPath(env);
    if (!writeServiceFile(plist, launchdPlist(t), 0o644, err)) return 1;
    out.write(`Wrote ${plist}\nWrote ${wrapper}\nStart it now and at every login with:\n  launchctl bootstrap gui/$(id -u) ${sh(plist)}\n`);
    out.write(`Restart it with: launchctl kickstart -k gui/$(id -u)/com.svc.runner\nLogs: ${launchdLogPath(env)}\n`);
    return 0;
  }
  return unsupported('install-service', platform, err);
}

/** Why `systemctl --user` cannot reach a user manager here (a container, a minimal server, WSL, a
 *  login without a session), or null when it can. */
function userSystemdMissing(env: Env): string | null {
  const r = spawnSync('systemctl', ['--user', 'show-environment'], { env: env as NodeJS.ProcessEnv, encoding: 'utf8', timeout: 5000 });
  if (r.error) return (r.error as NodeJS.ErrnoException).code === 'ENOENT' ? 'systemctl is not installed' : r.error.message;
  if (r.status === 0) return null;
  return (r.stderr || r.stdout).trim().split('\n')[0] || `systemctl --user exited ${r.status}`;
}

/** The other ways to keep the runner running when there is no user systemd. */
function noUserSystemd(why: string, unit: string, t: ServiceTarget): string {
  const system = '/etc/systemd/system/svc-runner.service';
  const user = t.env.USER || t.env.LOGNAME || '<user>';
  return [
    '',
    `No user systemd here (${why}): the commands above will not work. Instead, either`,
    '- run it under tmux (started again by hand after a reboot):',
    `  tmux new-session -d -s svc-runner ${sh(t.node)} ${sh(t.bundle)} run`,
    '- or install it as a system unit that runs as you (needs root):',
    `  sudo cp ${sh(unit)} ${system}`,
    `  sudo sed -i -e 's/^\\[Service\\]$/[Service]\\nUser=${user}/' -e 's/default\\.target/multi-user.target/' ${system}`,
    '  sudo systemctl daemon-reload && sudo systemctl enable --now svc-runner.service',
    '- or run `svc-runner run` in a terminal to try it first.',
    '',
  ].join('\n');
}

function unsupported(command: string, platform: string, err: Out): number {
  err.write(`svc-runner: ${command} supports Linux (systemd) and macOS (launchd), not ${platform}\n`);
  return 1;
}

/** What install-service writes, per platform, and the command that stops and disables the service. */
export function serviceFiles(platform: string, env: Env): { files: string[]; stop: string; after?: string } | null {
  if (platform === 'linux') return { files: [systemdUnitPath(env)], stop: 'systemctl --user disable --now svc-runner.service', after: 'systemctl --user daemon-reload' };
  if (platform === 'darwin') return { files: [launchdPlistPath(env), launchdWrapperPath(env)], stop: 'launchctl bootout gui/$(id -u)/com.svc.runner' };
  return null;
}

/** Whether anything (a file, a directory, a dangling symlink) is at the path. */
function present(path: string): boolean {
  try {
    lstatSync(path);
    return true;
  } catch {
    return false;
  }
}

export function uninstallService(platform: string, env: Env, out: Out, err: Out): number {
  const what = serviceFiles(platform, env);
  if (!what) return unsupported('uninstall-service', platform, err);
  const found = what.files.filter(present);
  if (found.length === 0) {
    out.write(`Nothing to remove: ${what.files.join(' and ')} ${what.files.length > 1 ? 'do' : 'does'} not exist.\n`);
    return 0;
  }
  // Printed first, in the order the user runs things: systemd and launchd keep a loaded service
  // running (and systemd its enable symlink) until told, whether or not its file is still there.
  out.write(`Stop and disable the service (if it runs) with:\n  ${what.stop}\n`);
  let failed = false;
  for (const path of found) {
    if (step(err, 'remove', path, () => unlinkSync(path), 'uninstall-service')) out.write(`Removed ${path}\n`);
    else failed = true;
  }
  for (const path of what.files.filter((p) => !found.includes(p))) out.write(`Not there (nothing to remove): ${path}\n`);
  if (what.after && !failed) out.write(`Then let systemd forget the unit: ${what.after}\n`);
  out.write('runner.json and the state directory are kept.\n');
  return failed ? 1 : 0;
}

// Runner commands a new user meets first, when the machine is not ready (issue #34): `install-service`
// where no user systemd answers says how to run it otherwise (tmux, a system unit), and
// `profiles --detect --write` that finds no agent CLI says what to do next instead of "Wrote 0".
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { runCli, sandbox } from './_harness.ts';
import type { Sandbox } from './_harness.ts';

let sb: Sandbox;
test.before.each(() => {
  sb = sandbox();
});
test.after.each(() => sb.cleanup());

test('install-service (linux) with no user systemd: the unit is written, then the tmux and system-unit ways, exit 0', async () => {
  sb.fakeBin('systemctl', 'echo "Failed to connect to bus: No medium found" >&2; exit 1');
  const r = await runCli(sb, ['install-service', '--platform', 'linux'], { USER: 'dev' });
  assert.is(r.status, 0, r.stderr);
  assert.match(r.stdout, 'No user systemd here (Failed to connect to bus: No medium found)');
  assert.match(r.stdout, /^ {2}tmux new-session -d -s svc-runner '.+' '.+svc-runner\.mjs' run$/m);
  assert.match(r.stdout, /^ {2}sudo cp '.+\/systemd\/user\/svc-runner\.service' \/etc\/systemd\/system\/svc-runner\.service$/m);
  assert.match(r.stdout, 'User=dev');
  assert.match(r.stdout, 'sudo systemctl daemon-reload && sudo systemctl enable --now svc-runner.service');
});

test('install-service (linux) where the user manager answers: no fallback text', async () => {
  sb.fakeBin('systemctl', 'exit 0');
  const r = await runCli(sb, ['install-service', '--platform', 'linux']);
  assert.is(r.status, 0, r.stderr);
  assert.match(r.stdout, 'systemctl --user enable --now svc-runner.service');
  assert.not.match(r.stdout, /No user systemd|tmux/);
});

test('profiles --detect --write with no claude or codex on PATH: "Wrote 0 profiles" and the next steps', async () => {
  sb.writeConfig({ otlp: { enabled: false } });
  const r = await runCli(sb, ['profiles', '--detect', '--write']);
  assert.is(r.status, 0, r.stderr);
  assert.match(r.stderr, /Wrote 0 profiles to /);
  assert.match(r.stderr, 'No agent CLI was found on PATH, so this runner cannot start a run yet');
  assert.match(r.stderr, 'npm install -g @anthropic-ai/claude-code');
  assert.match(r.stderr, '`codex login`');
  assert.match(r.stderr, 'run `svc-runner profiles --detect --write` again');
});

test.run();

// The exit wrapper of orchestrator sessions (runner/tmux.ts exitRecordingArgv, docs/orchestrator.md
// "Check"): the agent's status is recorded in a file before the pane dies, independently of tmux, and the
// agent's argv reaches it literally.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { clearRecordedEnd, exitFile, exitRecordingArgv, recordedEnd } from '../../runner/tmux.ts';

let state: string;
let env: Record<string, string>;
test.before.each(() => {
  state = mkdtempSync(join(tmpdir(), 'svc-exit-'));
  env = { XDG_STATE_HOME: state, HOME: state };
  mkdirSync(join(state, 'svc', 'exits'), { recursive: true });
});
test.after.each(() => rmSync(state, { recursive: true, force: true }));

const run = (argv: string[]) => {
  const [cmd, ...args] = argv;
  return spawnSync(cmd, args, { encoding: 'utf8', cwd: state });
};

test('the status of the wrapped command is its own and is written to the exit file (0, 3, 127)', () => {
  for (const [script, code] of [['exit 0', 0], ['exit 3', 3], ['exec /nonexistent/agent', 127]] as const) {
    const file = exitFile(env, 'svc-p1-orch');
    const r = run(exitRecordingArgv(file, ['/bin/sh', '-c', script]));
    assert.is(r.status, code, `${script}: ${r.stderr}`);
    assert.is(readFileSync(file, 'utf8'), `${code}\n`);
    assert.equal(recordedEnd(env, 'svc-p1-orch'), { exitCode: code, signal: null });
    assert.not.ok(existsSync(`${file}.tmp`), 'no temporary file left');
  }
});

test('a command ended by a signal is recorded as that signal', () => {
  const file = exitFile(env, 'svc-p1-orch');
  run(exitRecordingArgv(file, ['/bin/sh', '-c', 'kill -TERM $$']));
  assert.equal(recordedEnd(env, 'svc-p1-orch'), { exitCode: null, signal: 15 });
});

test('the argv reaches the command literally: nothing in it is run by the wrapper shell', () => {
  const file = exitFile(env, 'svc-p1-orch');
  const hostile = ['; touch PWNED1', '$(touch PWNED2)', '`touch PWNED3`', '"$f"', "it's", '-c', '--', ''];
  const r = run(exitRecordingArgv(file, ['/usr/bin/printf', '[%s]', ...hostile]));
  assert.is(r.status, 0, r.stderr);
  assert.is(r.stdout, hostile.map((a) => `[${a}]`).join(''));
  for (const name of ['PWNED1', 'PWNED2', 'PWNED3']) assert.not.ok(existsSync(join(state, name)), `${name} must not exist`);
});

test('no file, a cleared file or a garbled file → no recorded status (tmux is asked instead)', () => {
  const file = exitFile(env, 'svc-p1-orch');
  assert.is(recordedEnd(env, 'svc-p1-orch'), null);
  run(exitRecordingArgv(file, ['/bin/sh', '-c', 'exit 4']));
  clearRecordedEnd(env, 'svc-p1-orch');
  assert.is(recordedEnd(env, 'svc-p1-orch'), null);
  run(['/bin/sh', '-c', `printf 'x9\\n' > '${file}'`]);
  assert.is(recordedEnd(env, 'svc-p1-orch'), null);
});

test.run();

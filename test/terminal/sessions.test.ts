// terminal.attach beyond the orchestrator: a slot's session and a skill run's session (svc-run-<runId>,
// allowed when its run.json names the project, refused for another project's run); UTF-8 output
// arrives intact; the runner going away ends the browser's terminal with an exit message; with the
// runner offline the attach is refused with 4503. Real server, real runner bundle, real tmux.
// needs: tmux
import { randomBytes } from 'node:crypto';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { startServer } from '../helpers/server.ts';
import type { RunningServer } from '../helpers/server.ts';
import { killDaemons, waitUntil } from '../runner/_harness.ts';
import type { Daemon, Sandbox } from '../runner/_harness.ts';
import { openTerminal as open, pairedProject, startWatchingRunner, tmuxServer } from './_setup.ts';

const { socket, tmux, kill } = tmuxServer('svc-term');

let server: RunningServer;
let sb: Sandbox;
let daemon: Daemon;
let projectId: string;

const openTerminal = (session: string) => open(server, `projectId=${projectId}&session=${session}`);

/** A skill run's files as the run manager writes them (only run.json matters to the terminal). */
function writeRun(runId: string, project: string): string {
  const dir = join(sb.env.XDG_STATE_HOME, 'svc', 'runs', runId);
  mkdirSync(dir, { recursive: true });
  const run = {
    version: 1, runId, projectId: project, root: sb.dir, skill: 'demo', args: [], output: 'report', profileId: 'p', runtime: 'claude',
    argv: ['/bin/true'], cwd: sb.dir, env: {}, timeoutSec: 60, createdAt: new Date().toISOString(),
  };
  writeFileSync(join(dir, 'run.json'), JSON.stringify(run), { mode: 0o600 });
  return dir;
}

test.before(async () => {
  server = await startServer({ admin: true });
  ({ sb, projectId } = await pairedProject(server, 'term-sessions', 'gadgets'));
  daemon = await startWatchingRunner(sb, projectId, socket);
});
test.after(async () => {
  await killDaemons();
  kill();
  await server?.cleanup();
  sb?.cleanup();
});

test("a slot's session: the screen first with colours and cursor; UTF-8 output arrives whole", async () => {
  const session = `svc-${projectId}-slot-2`;
  tmux('new-session', '-d', '-s', session, '-x', '80', '-y', '24', 'sh');
  // Type only once the shell shows its prompt: on a loaded machine sh may take seconds to start.
  await waitUntil(() => /^[$#] ?$/m.test(tmux('capture-pane', '-p', '-t', `=${session}:`)), 30_000, 'the shell prompt');
  tmux('send-keys', '-t', `=${session}:`, "printf '\\033[31mred-before\\033[0m\\n'", 'Enter');
  await waitUntil(() => /^red-before$/m.test(tmux('capture-pane', '-p', '-t', `=${session}:`)), 30_000, () => `the red line on the pane; it shows ${JSON.stringify(tmux('capture-pane', '-p', '-t', `=${session}:`).trim())}`);
  const cursor = tmux('display-message', '-p', '-t', `=${session}:`, '#{cursor_y} #{cursor_x}').split(' ').map(Number);
  const t = openTerminal(session);
  await waitUntil(() => t.messages.some((m) => m.type === 'output'), 15_000, () => `the screen; got ${JSON.stringify(t.messages).slice(0, 300)}`);
  // The screen comes first, with its colours, and puts the cursor where the pane has it.
  const screen: string = t.messages.find((m) => m.type === 'output').data;
  assert.ok(screen.startsWith('\x1b[0m\x1b[2J\x1b[H'), JSON.stringify(screen.slice(0, 40)));
  assert.ok(screen.includes('\x1b[31mred-before'), JSON.stringify(screen.slice(0, 300)));
  assert.ok(screen.endsWith(`\x1b[${cursor[0] + 1};${cursor[1] + 1}H`), JSON.stringify(screen.slice(-40)));
  t.ws.send(JSON.stringify({ type: 'input', data: "printf 'caf\\303\\251 \\342\\234\\223 done\\n'\r" }));
  await waitUntil(() => t.text().includes('café ✓ done'), 10_000, () => `the UTF-8 line; got ${JSON.stringify(t.text().slice(-300))}`);
  t.ws.close();
  await t.closed;
  await waitUntil(() => tmux('list-clients') === '', 20_000, 'the control client detached');
  assert.ok(tmux('has-session', '-t', `=${session}`) === '');
});

test("a skill run's session: its own project's run yes, another project's run no", async () => {
  const mine = `${Date.now().toString(36)}-${randomBytes(4).toString('hex')}`;
  const theirs = `${Date.now().toString(36)}-${randomBytes(4).toString('hex')}`;
  const dirs = [writeRun(mine, projectId), writeRun(theirs, 'another-project')];
  try {
    for (const id of [mine, theirs]) tmux('new-session', '-d', '-s', `svc-run-${id}`, '-x', '80', '-y', '24', 'sh');
    tmux('send-keys', '-t', `=svc-run-${mine}:`, 'echo inside-the-run', 'Enter');
    const t = openTerminal(`svc-run-${mine}`);
    await waitUntil(() => t.text().includes('inside-the-run'), 15_000, () => `the run's screen; got ${JSON.stringify(t.messages).slice(0, 300)}`);
    t.ws.close();
    await t.closed;

    const other = openTerminal(`svc-run-${theirs}`);
    assert.is(await other.closed, 4409);
    assert.is(other.messages[0].code, 'session_not_allowed');
    const missing = openTerminal(`svc-run-no-such-run`);
    assert.is(await missing.closed, 4409);
    assert.is(missing.messages[0].code, 'session_not_allowed');
  } finally {
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  }
});

test('a session of the project that is not running: no_session', async () => {
  const t = openTerminal(`svc-${projectId}-orch`);
  assert.is(await t.closed, 4409);
  assert.is(t.messages[0].code, 'no_session');
});

test("the runner going away ends the browser's terminal; with the runner offline the attach is refused (4503)", async () => {
  const session = `svc-${projectId}-orch`;
  tmux('new-session', '-d', '-s', session, '-x', '80', '-y', '24', 'sh');
  const t = openTerminal(session);
  await waitUntil(() => t.messages.some((m) => m.type === 'output'), 15_000, 'the screen');
  await daemon.kill('SIGKILL');
  assert.is(await t.closed, 1000);
  const exit = t.messages.find((m) => m.type === 'exit');
  assert.ok(exit, JSON.stringify(t.messages.slice(-3)));
  assert.match(exit.reason, /runner disconnected/);
  // Its control client ends on its stdin's EOF (tmux -C), so nothing stays attached.
  const clients = () => tmux('list-clients', '-F', '#{client_pid} #{session_name} #{client_flags}');
  await waitUntil(() => clients() === '', 10_000, () => `the orphaned control client gone; clients: ${clients()}`);
  assert.ok(tmux('has-session', '-t', `=${session}`) === '', 'the session lives on');

  const offline = openTerminal(session);
  assert.is(await offline.closed, 4503);
  assert.is(offline.messages[0].code, 'runner_offline');
});

test.run();

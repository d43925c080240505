// terminal.attach across two server processes on one PostgreSQL database (docs/runner.md "Terminal"):
// the runner's socket is held by A, the browser's by B; the frames pass through NOTIFY. Real servers,
// real runner bundle, real tmux.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { freshPostgres, onlyOn } from '../helpers/db.ts';
import { startServer } from '../helpers/server.ts';
import type { RunningServer } from '../helpers/server.ts';
import { killDaemons, waitUntil } from '../runner/_harness.ts';
import type { Daemon, Sandbox } from '../runner/_harness.ts';
import { openTerminal, pairedProject, startWatchingRunner, tmuxServer } from './_setup.ts';

onlyOn('postgres', test, 2, () => {
  const { socket, tmux, kill } = tmuxServer('svc-term-rep');
  let pg: Awaited<ReturnType<typeof freshPostgres>>;
  let a: RunningServer;
  let b: RunningServer;
  let sb: Sandbox;
  let daemon: Daemon;
  let projectId: string;
  let session: string;
  const viaB = (query: string) => openTerminal(b, query, { authorization: `Bearer ${a.admin.token}` });

  test.before(async () => {
    pg = await freshPostgres();
    a = await startServer({ admin: true, dbEnv: { DATABASE_URL: pg.url } });
    b = await startServer({ dbEnv: { DATABASE_URL: pg.url } });
    ({ sb, projectId } = await pairedProject(a, 'term-rep', 'gadgets')); // the runner's config names A
    session = `svc-${projectId}-orch`;
    tmux('new-session', '-d', '-s', session, '-x', '80', '-y', '24', 'sh');
    tmux('send-keys', '-t', `=${session}:`, 'echo screen-before-attach', 'Enter');
    daemon = await startWatchingRunner(sb, projectId, socket);
  });
  test.after(async () => {
    await killDaemons();
    kill();
    await Promise.all([a?.cleanup(), b?.cleanup()]);
    await pg?.drop();
    sb?.cleanup();
  });

  test('a browser on B, the runner on A: screen, typed input (also larger than one NOTIFY), resize and detach all cross', async () => {
    const t = viaB(`projectId=${projectId}&session=${session}&cols=100&rows=30`);
    await waitUntil(() => t.text().includes('screen-before-attach'), 20_000, () => `the current screen through B; got ${JSON.stringify(t.messages).slice(0, 500)}`);
    t.ws.send(JSON.stringify({ type: 'input', data: 'echo typed-$((40+2))\r' }));
    await waitUntil(() => t.text().includes('typed-42'), 15_000, () => `the typed command's output; got ${JSON.stringify(t.text()).slice(-500)}`);
    // 3,000 characters typed at once: several NOTIFYs, reassembled in order (printf counts them back).
    const long = 'x'.repeat(3000);
    t.ws.send(JSON.stringify({ type: 'input', data: `printf '%s' '${long}' | wc -c\r` }));
    await waitUntil(() => /\b3000\b/.test(t.text().replace(/x{5,}/g, '')), 20_000, () => `wc's count of the long line; got ${JSON.stringify(t.text().slice(-300))}`);
    const size = () => tmux('display-message', '-p', '-t', `=${session}:`, '#{window_width}x#{window_height}');
    t.ws.send(JSON.stringify({ type: 'resize', cols: 120, rows: 40 }));
    await waitUntil(() => size() === '120x40', 20_000, () => `the window resized to 120x40 from B; is ${size()}`);
    t.ws.close();
    await t.closed;
    await waitUntil(() => tmux('list-clients') === '', 20_000, 'the control client detached (term.close crossed to A)');
    assert.ok(tmux('list-sessions', '-F', '#{session_name}').split('\n').includes(session), 'the session lives on');
  });

  test("the runner going away (from A) ends the browser's terminal on B; then the attach is refused as offline (4503)", async () => {
    const t = viaB(`projectId=${projectId}&session=${session}`);
    await waitUntil(() => t.messages.some((m) => m.type === 'output'), 20_000, 'the screen');
    await daemon.kill('SIGKILL');
    assert.is(await t.closed, 1000);
    const exit = t.messages.find((m) => m.type === 'exit');
    assert.ok(exit, JSON.stringify(t.messages.slice(-3)));
    assert.match(exit.reason, /runner disconnected/);
    await waitUntil(async () => {
      const again = viaB(`projectId=${projectId}&session=${session}`);
      return (await again.closed) === 4503 && again.messages[0]?.code === 'runner_offline';
    }, 90_000, 'the attach refused as offline');
  });
});

test.run();

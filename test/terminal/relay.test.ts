// terminal.attach end to end with real parts: the real server relays a browser-side WebSocket
// (/api/terminal) to the real runner bundle, which attaches to a real tmux session (private socket)
// in control mode: the screen arrives, typed input runs, resize sizes the tmux client, closing
// detaches and leaves the session alive, and every attach is audited. Refusals: not signed in, a
// viewer, a foreign Origin, a session outside the project, terminal.attach disabled on the runner.
// needs: tmux
import { randomBytes } from 'node:crypto';
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
let session: string;

const openTerminal = (query: string, headers?: Record<string, string>) => open(server, query, headers);

async function startRunner(extra: Record<string, unknown> = {}): Promise<void> {
  sb.writeConfig({ ...sb.readConfig(), ...extra });
  daemon = await startWatchingRunner(sb, projectId, socket);
}

test.before(async () => {
  server = await startServer({ admin: true });
  ({ sb, projectId } = await pairedProject(server, 'term', 'widgets'));
  session = `svc-${projectId}-orch`;
  tmux('new-session', '-d', '-s', session, '-x', '80', '-y', '24', 'sh');
  tmux('send-keys', '-t', `=${session}:`, 'echo screen-before-attach', 'Enter');
  await startRunner();
});
test.after(async () => {
  await killDaemons();
  kill();
  await server?.cleanup();
  sb?.cleanup();
});

test('attach: the screen, typed input, resize, detach leaves the session; the attach is audited', async () => {
  const t = openTerminal(`projectId=${projectId}&session=${session}&cols=100&rows=30`);
  await waitUntil(() => t.text().includes('screen-before-attach'), 15_000, () => `the current screen; got ${JSON.stringify(t.messages).slice(0, 500)}`);
  t.ws.send(JSON.stringify({ type: 'input', data: 'echo typed-$((40+2))\r' }));
  await waitUntil(() => t.text().includes('typed-42'), 10_000, () => `the typed command's output; got ${JSON.stringify(t.text()).slice(-500)}`);
  const size = () => tmux('display-message', '-p', '-t', `=${session}:`, '#{window_width}x#{window_height}');
  await waitUntil(() => size() === '100x30', 20_000, () => `the window sized 100x30 by the terminal; is ${size()}`);
  t.ws.send(JSON.stringify({ type: 'resize', cols: 120, rows: 40 }));
  await waitUntil(() => size() === '120x40', 20_000, () => `the window resized to 120x40; is ${size()}`);
  t.ws.close();
  await t.closed;
  await waitUntil(() => tmux('list-clients') === '', 20_000, 'the control client detached');
  assert.ok(tmux('list-sessions', '-F', '#{session_name}').split('\n').includes(session), 'the session lives on');

  const audit = await (await server.api('/api/audit?action=terminal.attach')).json();
  assert.is(audit.records.length, 1);
  assert.equal([audit.records[0].targetType, audit.records[0].targetId, audit.records[0].actorId !== null], ['project', projectId, true]);
  assert.is(audit.records[0].diff.session, session);
});

test('keys typed the moment the socket opens (while the server still checks the caller and the runner attaches) are kept and run in order', async () => {
  const t = openTerminal(`projectId=${projectId}&session=${session}&cols=80&rows=24`);
  await new Promise<void>((resolve) => t.ws.once('open', () => resolve()));
  for (const ch of 'echo early-$((20+3))\r') t.ws.send(JSON.stringify({ type: 'input', data: ch }));
  await waitUntil(() => t.text().includes('early-23'), 15_000, () => `the early keys' output; got ${JSON.stringify(t.text()).slice(-500)}`);
  t.ws.close();
  await t.closed;
});

test('refused: not signed in (4401), a foreign Origin (4403), a viewer (4403), a session outside the project (4409)', async () => {
  const anonymous = openTerminal(`projectId=${projectId}&session=${session}`, {});
  assert.is(await anonymous.closed, 4401);
  const foreign = openTerminal(`projectId=${projectId}&session=${session}`, { authorization: `Bearer ${server.admin.token}`, origin: 'https://evil.example' });
  assert.is(await foreign.closed, 4403);
  assert.is(foreign.messages[0].code, 'bad_origin');

  // A viewer of the project.
  const email = `viewer-${randomBytes(3).toString('hex')}@example.test`;
  const user = await (await server.api('/api/users', { method: 'POST', json: { email, name: 'Viewer' } })).json();
  const link = /set-password\?token=([\w-]+)/.exec(user.passwordSetUrl)![1];
  await fetch(`${server.url}/api/password`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ token: link, password: 'viewer password 123' }) });
  assert.is((await server.api(`/api/projects/${projectId}/members/${user.user.id}`, { method: 'PUT', json: { role: 'viewer' } })).status, 200);
  const signIn = await fetch(`${server.url}/api/session`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email, password: 'viewer password 123' }) });
  const cookie = signIn.headers.get('set-cookie')!.split(';')[0];
  const viewer = openTerminal(`projectId=${projectId}&session=${session}`, { cookie, origin: server.url });
  assert.is(await viewer.closed, 4403);
  assert.match(viewer.messages[0].message, /admin/);

  const outside = openTerminal(`projectId=${projectId}&session=someone-elses-session`);
  assert.is(await outside.closed, 4409);
  assert.is(outside.messages[0].code, 'session_not_allowed');
  const bad = openTerminal(`projectId=${projectId}&session=${encodeURIComponent('a;b')}`);
  assert.is(await bad.closed, 4400);
});

test('disabledCommands: ["terminal.attach"] → no terminal capability and the attach is refused as disabled', async () => {
  await daemon.kill('SIGTERM');
  await startRunner({ disabledCommands: ['terminal.attach'] });
  const runners = (await (await server.api('/api/runners')).json()).runners;
  await waitUntil(async () => (await (await server.api('/api/runners')).json()).runners[0].capabilities.includes('terminal') === false, 10_000, 'the capability gone');
  assert.equal(runners.length, 1);
  const t = openTerminal(`projectId=${projectId}&session=${session}`);
  assert.is(await t.closed, 4409);
  assert.is(t.messages[0].code, 'disabled');
});

test.run();

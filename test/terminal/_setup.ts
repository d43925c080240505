// Shared set-up of the terminal tests: a private tmux server, a project whose runner is the real
// runner bundle paired with the real server, the daemon watching it, and the browser-side socket.
// needs: tmux
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import * as assert from 'uvu/assert';
import WebSocket from 'ws';
import type { RunningServer } from '../helpers/server.ts';
import { runCli, sandbox, startDaemon, waitUntil } from '../runner/_harness.ts';
import type { Daemon, Sandbox } from '../runner/_harness.ts';

/** A tmux server on its own socket (`tmux -L`), so tests never touch a user's. */
export function tmuxServer(prefix: string) {
  const socket = `${prefix}-${randomBytes(4).toString('hex')}`;
  const tmux = (...args: string[]) => execFileSync('tmux', ['-L', socket, ...args], { encoding: 'utf8' }).trim();
  const kill = () => {
    try {
      tmux('kill-server');
    } catch {}
  };
  return { socket, tmux, kill };
}

/** A sandboxed machine paired as a new runner, and a project `name` on it rooted in the sandbox. */
export async function pairedProject(server: RunningServer, runnerName: string, name: string): Promise<{ sb: Sandbox; projectId: string }> {
  const sb = sandbox();
  const root = join(sb.dir, name);
  mkdirSync(root, { recursive: true });
  const made = await (await server.api('/api/runners', { method: 'POST', json: { name: runnerName } })).json();
  const paired = await runCli(sb, ['pair', '--server', server.url, '--code', made.code, '--no-detect']);
  assert.is(paired.status, 0, paired.stderr);
  const project = await (await server.api('/api/projects', { method: 'POST', json: { name, repo: `acme/${name}`, runnerId: made.runner.id, rootPath: root } })).json();
  return { sb, projectId: project.id };
}

/** Start the daemon on the tmux socket and wait until it is connected and watches the project. */
export async function startWatchingRunner(sb: Sandbox, projectId: string, socket: string): Promise<Daemon> {
  const daemon = startDaemon(sb, { SVC_TMUX_SOCKET: socket });
  await daemon.waitFor(/connected to/, 15_000);
  await waitUntil(() => (sb.readConfig().projects ?? []).some((p: { id: string }) => p.id === projectId), 15_000, 'the watch list');
  return daemon;
}

export interface Term {
  ws: WebSocket;
  messages: any[];
  text: () => string;
  closed: Promise<number>;
}

/** The browser side of /api/terminal (as the admin unless other headers are given). */
export function openTerminal(server: RunningServer, query: string, headers: Record<string, string> = { authorization: `Bearer ${server.admin.token}` }): Term {
  const ws = new WebSocket(`${server.url.replace(/^http/, 'ws')}/api/terminal?${query}`, { headers });
  const messages: any[] = [];
  ws.on('message', (d) => messages.push(JSON.parse(d.toString())));
  ws.on('error', () => {});
  const closed = new Promise<number>((r) => ws.on('close', (code) => r(code)));
  return { ws, messages, closed, text: () => messages.filter((m) => m.type === 'output').map((m) => m.data).join('') };
}

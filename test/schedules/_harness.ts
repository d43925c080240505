// Shared set-up of the project schedule tests: a real server, a project served by a paired protocol
// client (the runner), an encryption key (webhook secrets), and a second project whose runner is paired but never connects (offline).
import { randomBytes } from 'node:crypto';
import { startServer } from '../helpers/server.ts';
import type { RunningServer, StartOptions } from '../helpers/server.ts';
import { callAs } from '../helpers/users.ts';
import { connect, pairRunner } from '../helpers/wsclient.ts';
import type { Client } from '../helpers/wsclient.ts';
import { KEY, makeProject, waitFor } from '../triggers/_harness.ts';

export { makeProject, waitFor };

export interface Setup {
  server: RunningServer;
  projectId: string;
  runner: { runnerId: string; token: string };
  ws: Client;
  /** A project whose runner is offline. */
  offlineProjectId: string;
}

export async function setup(opts: StartOptions = {}): Promise<Setup> {
  const server = await startServer({ admin: true, ...opts, env: { APP_ENCRYPTION_KEY: KEY, NODE_ENV: 'test', ...opts.env } });
  const runner = await pairRunner(server.api, server.url, `sched-${randomBytes(2).toString('hex')}`);
  const projectId = await makeProject(server, runner.runnerId);
  const off = await pairRunner(server.api, server.url, `off-${randomBytes(2).toString('hex')}`);
  const offlineProjectId = await makeProject(server, off.runnerId);
  const ws = connect(server.url, runner.token);
  await ws.next('welcome');
  return { server, projectId, runner, ws, offlineProjectId };
}

export const daily = (over: Record<string, unknown> = {}) => ({ name: 'nightly review', cron: '0 3 * * *', timezone: 'Europe/Berlin', skill: 'review', args: ['--since', '1d'], ...over });

export async function createSchedule(server: RunningServer, projectId: string, body: Record<string, unknown> = daily(), token?: string): Promise<Record<string, any>> {
  const res = await callAs(server, `/api/projects/${projectId}/schedules`, { method: 'POST', json: body, token });
  if (res.status !== 201) throw new Error(`create schedule: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body;
}

/** A 6-field cron (seconds first) that matches once a day, at `at` in UTC. */
export function cronAt(at: Date): string {
  return `${at.getUTCSeconds()} ${at.getUTCMinutes()} ${at.getUTCHours()} * * *`;
}

/** A skill_run.state event for a run, as the runner reports it. */
export async function reportRun(ws: Client, projectId: string, runId: string, state: string, error?: string) {
  const now = new Date().toISOString();
  const payload = { runId, project: projectId, skill: 'review', args: [], output: 'report', profile: 'cc', runtime: 'claude', createdAt: now, state, at: now, ...(error ? { error } : {}) };
  ws.send({ type: 'events', events: [{ id: `run.${runId}.${state}`, source: `project:${projectId}`, kind: 'skill_run.state', ts: now, payload }] });
  await ws.next('ack');
}

// Shared set-up of the runner pool tests (functions/runs/pool.ts): protocol fake runners that announce
// POOL_CAPABILITY, report capacity, answer skill.run as a pool runner does (the server's runId) and
// report their runs' states; pool triggers that queue a run per call. Pools, tags and pool targets are
// set with SQL on the test's PostgreSQL (the API for them is issue #37's other slice).
import { randomBytes } from 'node:crypto';
import type postgres from 'postgres';
import { POOL_CAPABILITY } from '../../protocol/frames.ts';
import type { RunningServer } from '../helpers/server.ts';
import { connect, pairRunner } from '../helpers/wsclient.ts';
import type { Client } from '../helpers/wsclient.ts';
import { createTrigger, deliveries, post, skillTrigger, waitFor } from '../triggers/_harness.ts';

export { waitFor };

export interface Fake {
  runnerId: string;
  token: string;
  client: Client;
  /** The run ids of the skill.run commands received, in order (one entry per command). */
  runs: string[];
  /** The run ids of the skill.cancel commands received. */
  cancels: string[];
  /** Answer skill.run with this refusal instead of done. */
  refuse?: { code: string; message: string };
  max: number;
}

/** A paired runner with `tags`, connected (to `o.via`, else `server`) as a pool runner with `max` places. */
export async function fakeRunner(server: RunningServer, sql: postgres.Sql, o: { max?: number; tags?: string[]; pool?: boolean; via?: RunningServer } = {}): Promise<Fake> {
  const r = await pairRunner(server.api, server.url, `pool-${randomBytes(3).toString('hex')}`);
  await sql`update runners set tags = ${sql.json(o.tags ?? [])} where id = ${r.runnerId}`;
  const f: Fake = { runnerId: r.runnerId, token: r.token, client: undefined as unknown as Client, runs: [], cancels: [], max: o.max ?? 1 };
  await goOnline(o.via ?? server, f, o.pool ?? true);
  return f;
}

/** (Re)connect the fake runner to `server`: hello, capacity, and answers to its commands. */
export async function goOnline(server: RunningServer, f: Fake, pool = true): Promise<void> {
  const client = connect(server.url, f.token);
  await client.next('welcome');
  client.ws.on('message', (d) => {
    const frame = JSON.parse(d.toString());
    if (frame.type !== 'command') return;
    if (frame.name === 'skill.run') {
      const runId = frame.args.runId as string;
      f.runs.push(runId);
      if (f.refuse) return client.send({ type: 'result', requestId: frame.requestId, ok: false, error: f.refuse });
      return client.send({ type: 'result', requestId: frame.requestId, ok: true, data: { runId } });
    }
    if (frame.name === 'skill.cancel') f.cancels.push(frame.args.runId);
    client.send({ type: 'result', requestId: frame.requestId, ok: true, data: {} });
  });
  client.send({ type: 'hello', version: '0.1.0', target: 'linux-amd64', hostname: 'fake', capabilities: pool ? [POOL_CAPABILITY] : [] });
  client.send({ type: 'capacity', maxConcurrentRuns: f.max, running: 0 });
  f.client = client;
}

export async function goOffline(f: Fake): Promise<void> {
  f.client.ws.close();
  await f.client.closed;
}

let eventSeq = 0;
/** A skill_run.state event of `runId` from the fake runner, acked. */
export async function report(f: Fake, projectId: string, runId: string, state: string): Promise<void> {
  const now = new Date().toISOString();
  const payload = { runId, project: projectId, skill: 'review', args: [], output: 'report', profile: 'cc', runtime: 'claude', createdAt: now, state, at: now };
  f.client.send({ type: 'events', events: [{ id: `pool.${runId}.${state}.${++eventSeq}`, source: `project:${projectId}`, kind: 'skill_run.state', ts: now, payload }] });
  await f.client.next('ack');
}

/** A project whose primary runner never connects, with the fakes as pool members. */
export async function poolProject(server: RunningServer, sql: postgres.Sql, members: Fake[]): Promise<string> {
  const primary = (await (await server.api('/api/runners', { method: 'POST', json: { name: `primary-${randomBytes(2).toString('hex')}` } })).json()).runner.id;
  const name = `p-${randomBytes(3).toString('hex')}`;
  const made = await (await server.api('/api/projects', { method: 'POST', json: { name, repo: `acme/${name}`, runnerId: primary, rootPath: `/srv/${name}` } })).json();
  for (const m of members) await addMember(sql, made.id, m);
  return made.id;
}

export const addMember = (sql: postgres.Sql, projectId: string, m: Fake) =>
  sql`insert into project_runners (project_id, runner_id, root_path, root_state) values (${projectId}, ${m.runnerId}, ${`/pool/${projectId}`}, 'ok')`;

/** A pool trigger called once: the id of the run it queued. */
export async function queueRun(server: RunningServer, sql: postgres.Sql, projectId: string, o: { tags?: string[]; timeoutMinutes?: number; retry?: boolean } = {}): Promise<string> {
  const t = await createTrigger(server, projectId, skillTrigger({ name: `pool ${randomBytes(3).toString('hex')}`, args: [], allowedPaths: [] }));
  await sql`
    update triggers set target = 'pool', target_tags = ${sql.json(o.tags ?? [])}, queue_timeout_minutes = ${o.timeoutMinutes ?? 30},
           retry_on_runner_loss = ${o.retry ?? false} where id = ${t.id}`;
  const res = await post(t.url, t.secret, { x: 1 }, { delivery: `d-${randomBytes(4).toString('hex')}` });
  if (res.status !== 202) throw new Error(`trigger call: ${res.status} ${res.text}`);
  const d = await waitFor('the pool delivery fired', async () => (await deliveries(server, projectId, t.id)).find((x) => x.status !== 'accepted'));
  if (d.status !== 'fired' || !d.runId) throw new Error(`delivery not fired: ${JSON.stringify(d)}`);
  return d.runId;
}

/** The run as GET /api/runs shows it. */
export async function runOf(server: RunningServer, projectId: string, runId: string): Promise<Record<string, any>> {
  const body = await (await server.api(`/api/runs?projectId=${projectId}&limit=100`)).json();
  const run = body.runs.find((r: { id: string }) => r.id === runId);
  if (!run) throw new Error(`run ${runId} not listed: ${JSON.stringify(body).slice(0, 300)}`);
  return run;
}

/** Wait until the run's state (and, when given, reason) is as expected; returns it. */
export const runIs = (server: RunningServer, projectId: string, runId: string, state: string, extra: (r: Record<string, any>) => boolean = () => true, ms = 15_000) =>
  waitFor(`run ${runId} ${state}`, async () => {
    const r = await runOf(server, projectId, runId);
    return r.state === state && extra(r) ? r : undefined;
  }, ms);

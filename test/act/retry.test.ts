// run.retry through an action link, against the real server: a run that a trigger started fails, the
// project's admins get run.failed with a "Run again" link, and the link starts a new run of the same
// skill with the same arguments on the project's runner (skill.run, as the runs the triggers start),
// audited via link; the second use is 409. A run a person started makes no such notification.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { startServer } from '../helpers/server.ts';
import type { RunningServer } from '../helpers/server.ts';
import { callAs } from '../helpers/users.ts';
import { connect, pairRunner } from '../helpers/wsclient.ts';
import type { Client } from '../helpers/wsclient.ts';
import { KEY, createTrigger, makeProject, post, skillTrigger, waitFor } from '../triggers/_harness.ts';
import { act, signIn, tokenOf } from './_harness.ts';

let server: RunningServer;
let ws: Client;
let project = '';
const call = (path: string) => callAs(server, path);

test.before(async () => {
  server = await startServer({ admin: true, env: { APP_ENCRYPTION_KEY: KEY, NODE_ENV: 'test' } });
  const r = await pairRunner(server.api, server.url, 'retry-box');
  project = await makeProject(server, r.runnerId);
  ws = connect(server.url, r.token);
  await ws.next('welcome');
});
test.after(async () => {
  ws?.ws.close();
  await server?.cleanup();
});

const now = () => new Date().toISOString();
const failed = (runId: string) => ({
  id: `run.${runId}.failed`, source: `project:${project}`, kind: 'skill_run.state', ts: now(),
  payload: { runId, project, skill: 'review', args: ['--ref', 'main'], output: 'report', profile: 'cc', runtime: 'claude', createdAt: now(), state: 'failed', at: now(), error: 'exit 1' },
});

test('a trigger run that failed: run.failed with a Run again link that starts the same skill again, once', async () => {
  const t = await createTrigger(server, project, skillTrigger({ name: 'on push' }));
  const [hook, cmd] = await Promise.all([post(t.url, t.secret, { ref: 'main' }, { delivery: 'retry-1' }), ws.next('command')]);
  assert.is(hook.status, 202);
  assert.is(cmd.name, 'skill.run');
  ws.send({ type: 'result', requestId: cmd.requestId, ok: true, data: { runId: 'run-first', state: 'queued' } });
  await waitFor('the delivery fired', async () => ((await call(`/api/projects/${project}/triggers/${t.id}/deliveries`)).body.deliveries as any[]).find((d) => d.status === 'fired'));
  // A run started by a person fails too: no notification for it.
  ws.send({ type: 'events', events: [failed('run-first'), failed('run-by-hand')] });
  await ws.next('ack');
  const n = await waitFor('run.failed', async () => ((await call('/api/notifications')).body.notifications as any[]).find((x) => x.kind === 'run.failed'));
  assert.equal([n.data.runId, n.data.sourceName, n.actions.map((a: any) => a.label)], ['run-first', 'on push', ['Run again']]);
  assert.is(((await call('/api/notifications')).body.notifications as any[]).filter((x) => x.kind === 'run.failed').length, 1, 'not for the run started by hand');

  const session = await signIn(server, server.admin.email, server.admin.password);
  const link = tokenOf(n.actions[0].url);
  const d = await act(server, 'GET', link, session);
  assert.equal([d.status, d.body.kind, d.body.facts.skill, d.body.facts.args], [200, 'run.retry', 'review', ['--ref', 'main']]);
  const done = act(server, 'POST', link, session);
  const again = await ws.next('command');
  assert.equal([again.name, again.args.skill, again.args.args, again.args.projectId], ['skill.run', 'review', ['--ref', 'main'], project]);
  ws.send({ type: 'result', requestId: again.requestId, ok: true, data: { runId: 'run-second', state: 'queued' } });
  const r = await done;
  assert.equal([r.status, r.body.data], [200, { runId: 'run-second', retryOf: 'run-first' }]);
  const records = (await call('/api/audit?action=run.retry')).body.records as any[];
  assert.equal(records.map((x) => [x.diff.via, x.diff.runId]), [['link', 'run-second']]);
  assert.is((await act(server, 'POST', link, session)).status, 409);
});

test.run();

// POST /hooks/github/<appPublicId> against the real server, with a protocol client as the projects'
// runner (docs/github-app.md): a signed delivery is recorded and collector.poll reaches the runner of
// every project of the repository (owner/name case-insensitive) with the runner's answer recorded; a
// forged or missing signature → 401, an unknown app → 404, both empty and nothing recorded; a redelivery
// is ignored and recorded once; other events are recorded without a poll; an offline runner is an
// outcome, not an error; the headers and the size are checked.
import { randomBytes, randomUUID } from 'node:crypto';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { startServer } from '../helpers/server.ts';
import type { RunningServer } from '../helpers/server.ts';
import { callAs } from '../helpers/users.ts';
import { connect, pairRunner } from '../helpers/wsclient.ts';
import type { Client } from '../helpers/wsclient.ts';
import { makeProject, waitFor } from '../triggers/_harness.ts';
import { githubSignature } from '../../functions/codehost/verify.ts';
import { postGithub, pushEvent } from './_github.ts';

let server: RunningServer;
let ws: Client;
let app: { id: string; webhookUrl: string; webhookSecret: string };
let projectA = ''; // repo Acme/Widgets on the connected runner
let projectB = ''; // repo acme/widgets too, on the same runner
let projectOther = ''; // another repository on the same runner
let runnerId = '';
const call = (path: string, init: { method?: string; json?: unknown; token?: string } = {}) => callAs(server, path, init);

async function project(repo: string, runner: string): Promise<string> {
  const name = `p-${randomBytes(3).toString('hex')}`;
  const made = await call('/api/projects', { method: 'POST', json: { name, repo, runnerId: runner, rootPath: `/srv/${name}` } });
  assert.is(made.status, 201);
  return made.body.id;
}

test.before(async () => {
  server = await startServer({ admin: true, env: { APP_ENCRYPTION_KEY: Buffer.alloc(32, 5).toString('base64') } });
  const runner = await pairRunner(server.api, server.url, 'gh-runner');
  runnerId = runner.runnerId;
  projectA = await project('Acme/Widgets', runnerId);
  projectB = await project('acme/widgets', runnerId);
  projectOther = await project('acme/other', runnerId);
  ws = connect(server.url, runner.token);
  await ws.next('welcome');
  const made = (await call('/api/github-apps', { method: 'POST', json: { name: 'hook tests' } })).body;
  app = { id: made.app.id, webhookUrl: made.webhookUrl, webhookSecret: made.webhookSecret };
});
test.after(async () => {
  ws?.ws.close();
  await server?.cleanup();
});

const deliveries = async () => (await call(`/api/github-apps/${app.id}/deliveries?limit=200`)).body.deliveries as Record<string, any>[];
const deliveryOf = async (deliveryId: string) => (await deliveries()).find((d) => d.deliveryId === deliveryId);
const commandsFor = (projectId: string) => ws.frames.filter((f: any) => f.type === 'command' && f.name === 'collector.poll' && f.args.projectId === projectId);

/** Take the next collector.poll frames and answer them as the runner would. */
async function answerPolls(n: number, answer: (f: Record<string, any>) => Record<string, unknown>) {
  const got: Record<string, any>[] = [];
  for (let i = 0; i < n; i++) {
    const f = await ws.next('command');
    assert.is(f.name, 'collector.poll');
    ws.send({ type: 'result', requestId: f.requestId, ...answer(f) });
    got.push(f);
  }
  return got;
}

test('a signed push: 202, recorded with event, action and repo; collector.poll reaches the runner for each project of the repo at once; answers recorded', async () => {
  const delivery = randomUUID();
  const res = await postGithub(app.webhookUrl, app.webhookSecret, 'push', pushEvent('acme/WIDGETS'), { delivery });
  assert.is(res.status, 202, res.text);
  assert.equal(res.body, { deliveryId: delivery, status: 'accepted', projects: 2 });
  // The ARRIVAL of the command is what counts here; one project's runner answers not_implemented.
  const polls = await answerPolls(2, (f) => (f.args.projectId === projectA ? { ok: true, data: { polled: true } } : { ok: false, error: { code: 'not_implemented', message: 'collector.poll is not implemented yet' } }));
  assert.equal(polls.map((f) => f.args.projectId).sort(), [projectA, projectB].sort());
  assert.equal(polls.map((f) => Object.keys(f.args)), [['projectId'], ['projectId']]);
  assert.ok(polls.every((f) => f.timeoutMs === 30_000), 'the allowlist timeout');
  const row = await waitFor('the poll answers on the delivery', async () => {
    const d = await deliveryOf(delivery);
    return d && d.outcome !== 'polling' && d;
  });
  assert.equal([row.event, row.action, row.repo, row.outcome], ['push', null, 'acme/WIDGETS', 'poll_failed']);
  const byProject = Object.fromEntries(row.polls.map((p: any) => [p.projectId, p]));
  assert.equal(byProject[projectA], { projectId: projectA, runnerId, status: 'done' });
  assert.equal(byProject[projectB].error.code, 'not_implemented');
  assert.is(commandsFor(projectOther).length, 0, 'another repository is not polled');
});

test('every runner answering ok → outcome polled; the action is recorded', async () => {
  const delivery = randomUUID();
  const res = await postGithub(app.webhookUrl, app.webhookSecret, 'pull_request', { action: 'opened', number: 5, pull_request: { number: 5 }, repository: { full_name: 'acme/other' } }, { delivery });
  assert.is(res.status, 202);
  const [f] = await answerPolls(1, () => ({ ok: true, data: {} }));
  assert.is(f.args.projectId, projectOther);
  const row = await waitFor('polled', async () => ((await deliveryOf(delivery))?.outcome === 'polled' ? deliveryOf(delivery) : false));
  assert.equal([row.event, row.action, row.repo], ['pull_request', 'opened', 'acme/other']);
});

test('forged, missing or other-secret signature → 401 with an empty body, nothing recorded, no command', async () => {
  const before = (await deliveries()).length;
  const sent = ws.frames.length;
  const body = pushEvent('acme/widgets');
  const forged = [
    await postGithub(app.webhookUrl, 'not the secret', 'push', body),
    await postGithub(app.webhookUrl, app.webhookSecret, 'push', body, { signature: null }),
    await postGithub(app.webhookUrl, app.webhookSecret, 'push', body, { signature: 'sha256=' + '0'.repeat(64) }),
    await postGithub(app.webhookUrl, app.webhookSecret, 'push', body, { signature: 'sha1=' + '0'.repeat(40) }),
    // Signed over other bytes than those sent: the signature covers the exact body.
    await postGithub(app.webhookUrl, app.webhookSecret, 'push', body, { signature: githubSignature(app.webhookSecret, JSON.stringify(body) + ' ') }),
  ];
  for (const r of forged) assert.equal([r.status, r.text], [401, ''], JSON.stringify(r));
  assert.is((await deliveries()).length, before);
  // A signed delivery's poll is the next command: the forged ones sent none before it.
  assert.is((await postGithub(app.webhookUrl, app.webhookSecret, 'push', pushEvent('acme/other'))).status, 202);
  const [next] = await answerPolls(1, () => ({ ok: true, data: {} }));
  assert.is(next.args.projectId, projectOther);
  assert.is(ws.frames.filter((f, i) => i >= sent && f.type === 'command').length, 1);
});

test('a redelivery (same X-GitHub-Delivery) → 200 duplicate, recorded once, no second collector.poll', async () => {
  const delivery = randomUUID();
  const body = { action: 'completed', check_suite: { id: 9 }, repository: { full_name: 'acme/other' } };
  assert.is((await postGithub(app.webhookUrl, app.webhookSecret, 'check_suite', body, { delivery })).status, 202);
  await answerPolls(1, () => ({ ok: true, data: {} }));
  const again = await Promise.all([1, 2, 3].map(() => postGithub(app.webhookUrl, app.webhookSecret, 'check_suite', body, { delivery })));
  for (const r of again) assert.equal([r.status, r.body], [200, { deliveryId: delivery, status: 'duplicate' }]);
  // A later delivery's poll is the next command: the duplicates sent none before it.
  const marker = randomUUID();
  assert.is((await postGithub(app.webhookUrl, app.webhookSecret, 'status', { state: 'success', repository: { full_name: 'acme/other' } }, { delivery: marker })).status, 202);
  const [next] = await answerPolls(1, () => ({ ok: true, data: {} }));
  assert.is(next.args.projectId, projectOther);
  await waitFor('the marker polled', async () => (await deliveryOf(marker))?.outcome === 'polled');
  assert.is((await deliveries()).filter((d) => d.deliveryId === delivery).length, 1);
});

test('unknown app id → 404 with an empty body, signed or not; malformed ids too', async () => {
  const unknownUrl = app.webhookUrl.replace(/[^/]+$/, 'A'.repeat(24));
  for (const url of [unknownUrl, `${server.url}/hooks/github/short`, `${server.url}/hooks/github/%00%01`]) {
    const r = await postGithub(url, app.webhookSecret, 'push', pushEvent('acme/widgets'));
    assert.equal([r.status, r.text], [404, ''], url);
  }
});

test('ping, events without a repository or not about one, and repositories without a project: recorded, no command', async () => {
  const sent = ws.frames.filter((f) => f.type === 'command').length;
  const cases: [string, unknown, string][] = [
    ['ping', { zen: 'Design for failure.', hook_id: 3 }, 'ping'],
    ['installation', { action: 'created', installation: { id: 1 } }, 'ignored'],
    ['star', { action: 'created', repository: { full_name: 'acme/widgets' } }, 'ignored'],
    ['issues', { action: 'opened', repository: { full_name: 'acme/nobody' } }, 'no_project'],
  ];
  for (const [event, body, outcome] of cases) {
    const delivery = randomUUID();
    assert.is((await postGithub(app.webhookUrl, app.webhookSecret, event, body, { delivery })).status, 202, event);
    assert.is((await deliveryOf(delivery))?.outcome, outcome, event);
  }
  const notJson = randomUUID();
  const bad = await postGithub(app.webhookUrl, app.webhookSecret, 'push', '[1, 2', { delivery: notJson });
  assert.equal([bad.status, bad.body.error.code], [400, 'invalid_payload']);
  assert.is((await deliveryOf(notJson))?.outcome, 'invalid_payload');
  assert.is(ws.frames.filter((f) => f.type === 'command').length, sent);
});

test('missing X-GitHub-Delivery or X-GitHub-Event → 400 naming the header, nothing recorded; over 1 MB → 413', async () => {
  const before = (await deliveries()).length;
  const noId = await postGithub(app.webhookUrl, app.webhookSecret, 'push', pushEvent('acme/widgets'), { headers: { 'x-github-delivery': null } });
  assert.equal([noId.status, Object.keys(noId.body.error.fields)], [400, ['X-GitHub-Delivery']]);
  const noEvent = await postGithub(app.webhookUrl, app.webhookSecret, 'push', pushEvent('acme/widgets'), { headers: { 'x-github-event': null } });
  assert.equal([noEvent.status, Object.keys(noEvent.body.error.fields)], [400, ['X-GitHub-Event']]);
  const big = await postGithub(app.webhookUrl, app.webhookSecret, 'push', { ...pushEvent('acme/widgets'), pad: 'x'.repeat(1024 * 1024) });
  assert.is(big.status, 413);
  assert.is((await deliveries()).length, before);
});

test('the runner offline, or a project without a runner: recorded as the poll outcome, the hook still answers 202', async () => {
  const never = (await call('/api/runners', { method: 'POST', json: { name: 'never-connected' } })).body.runner.id;
  const offline = await makeProject(server, never);
  const repo = (await call(`/api/projects/${offline}`)).body.repo as string;
  const delivery = randomUUID();
  assert.is((await postGithub(app.webhookUrl, app.webhookSecret, 'issues', { action: 'opened', repository: { full_name: repo } }, { delivery })).status, 202);
  const row = await waitFor('the offline outcome', async () => {
    const d = await deliveryOf(delivery);
    return d && d.outcome !== 'polling' && d;
  });
  assert.equal([row.outcome, row.polls], ['poll_failed', [{ projectId: offline, runnerId: never, status: 'offline' }]]);
});

test.run();

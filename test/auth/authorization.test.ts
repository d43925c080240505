// Every id in a path or a body is a claim checked against the caller's rights on THAT resource
// (docs/security.md, "Authorization" and "Threat model"). Against the real server:
//   - each role × each runner-wide command × own runner / another team's runner;
//   - every operation of the OpenAPI document, called by a project admin (the strongest account that is
//     not an instance admin) with ids of things it has no rights on: the expected refusal, and afterwards
//     nothing it should not reach has changed. A new route without a probe here fails the test.
import { randomBytes } from 'node:crypto';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { COMMANDS, COMMAND_NAMES } from '../../protocol/commands.ts';
import type { CommandName } from '../../protocol/commands.ts';
import { startServer } from '../helpers/server.ts';
import type { RunningServer } from '../helpers/server.ts';
import { callAs, makeUser } from '../helpers/users.ts';
import type { Answer, TestUser } from '../helpers/users.ts';
import { connect, pairRunner } from '../helpers/wsclient.ts';

let server: RunningServer;
const call = (path: string, init: { method?: string; json?: unknown; token?: string } = {}) => callAs(server, path, init);

let runnerA = ''; // serves project A, where the users below have their roles
let runnerB = ''; // another team's runner, serving project B
let projectA = '';
let projectB = '';
let runB = ''; // a skill run of project B
let sessionB = ''; // an agent session of project B
let eventB = ''; // a catalogue event of project B (GET /api/events)
let webhookId = '';
let triggerB = ''; // a trigger of project B
let triggerBPublic = '';
let scheduleB = ''; // a project schedule of project B
let githubApp = ''; // a registered GitHub App (instance-wide)
let githubAppPublic = '';
const users: Record<'padmin' | 'operator' | 'viewer', TestUser> = {} as never;

test.before(async () => {
  server = await startServer({ admin: true, env: { APP_ENCRYPTION_KEY: randomBytes(32).toString('base64') } });
  runnerA = (await call('/api/runners', { method: 'POST', json: { name: 'team-a' } })).body.runner.id;
  const b = await pairRunner(server.api, server.url, 'team-b');
  runnerB = b.runnerId;
  projectA = (await call('/api/projects', { method: 'POST', json: { name: 'A', repo: 'acme/a', runnerId: runnerA, rootPath: '/srv/a' } })).body.id;
  projectB = (await call('/api/projects', { method: 'POST', json: { name: 'B', repo: 'acme/b', runnerId: runnerB, rootPath: '/srv/b' } })).body.id;
  for (const role of ['padmin', 'operator', 'viewer'] as const) {
    users[role] = await makeUser(server, role);
    const r = await call(`/api/projects/${projectA}/members/${users[role].id}`, { method: 'PUT', json: { role: role === 'padmin' ? 'admin' : role } });
    assert.is(r.status, 200);
  }
  // A run of project B, reported by B's runner through the hub like any run.
  runB = `run-${randomBytes(4).toString('hex')}`;
  const ws = connect(server.url, b.token);
  await ws.next('welcome');
  const now = new Date().toISOString();
  const payload = { runId: runB, project: projectB, skill: 'review', args: [], output: 'report', profile: 'cc', runtime: 'claude', model: 'm', timeoutSec: 600, createdAt: now, branch: 'b', state: 'queued', at: now };
  const session = { runtime: 'claude', sessionId: `s-${runB}`, source: 'transcript', models: ['claude-sonnet-4-5'], firstAt: now, lastAt: now, project: projectB };
  ws.send({
    type: 'events',
    events: [
      { id: `run.${runB}.queued`, source: `project:${projectB}`, kind: 'skill_run.state', ts: now, payload },
      { id: `session.${runB}`, source: `project:${projectB}`, kind: 'session.meta', ts: now, payload: session },
      { id: `slot.${runB}`, source: `project:${projectB}`, kind: 'slot.dispatched', ts: now, payload: { project: projectB, slot: 'w1', issue: 3, title: 'B only' } },
    ],
  });
  await ws.next('ack');
  ws.ws.close();
  assert.is((await call(`/api/runs/${runB}`)).status, 200, 'the run exists');
  sessionB = (await call(`/api/sessions?projectId=${projectB}`)).body.sessions[0].id;
  eventB = (await call(`/api/events?projectId=${projectB}`)).body.events[0].id;
  const hook = await call('/api/webhooks', { method: 'POST', json: { url: 'https://receiver.example.com/hook', events: ['pr.opened'] } });
  assert.is(hook.status, 201);
  webhookId = hook.body.id;
  const trig = await call(`/api/projects/${projectB}/triggers`, { method: 'POST', json: { name: 'b', action: 'next_round' } });
  assert.is(trig.status, 201);
  triggerB = trig.body.trigger.id;
  triggerBPublic = trig.body.trigger.publicId;
  const sched = await call(`/api/projects/${projectB}/schedules`, { method: 'POST', json: { name: 'b', cron: '0 3 * * *', timezone: 'UTC', skill: 'review' } });
  assert.is(sched.status, 201);
  scheduleB = sched.body.id;
  const gh = await call('/api/github-apps', { method: 'POST', json: { name: 'instance app' } });
  assert.is(gh.status, 201);
  githubApp = gh.body.app.id;
  githubAppPublic = gh.body.appPublicId;
});
test.after(async () => server?.cleanup());

const RUNNER_WIDE = COMMAND_NAMES.filter((n) => !COMMANDS[n].project);
const source = { repo: 'https://example.com/skills.git', path: 'skills/x' };
const wideArgs: Partial<Record<CommandName, Record<string, unknown>>> = {
  'project.inspect': { path: '/etc' },
  'collector.poll': {},
  'skill.search': { query: 'x' },
  'skill.inspect': { source },
  'skill.install': { source },
  'skill.uninstall': { name: 'x' },
};

test('the runner-wide commands are exactly the ones without a project', () => {
  assert.equal(RUNNER_WIDE.sort(), ['collector.poll', 'project.inspect', 'runner.describe', 'runner.ping', 'skill.inspect', 'skill.install', 'skill.list', 'skill.search', 'skill.uninstall']);
});

test('runner-wide commands: instance admin passes (503, runner offline); project admin, operator, viewer → 403 on their runner, 404 on another', async () => {
  for (const name of RUNNER_WIDE) {
    const args = wideArgs[name] ?? {};
    for (const runner of [runnerA, runnerB]) {
      const admin = await call(`/api/runners/${runner}/commands`, { method: 'POST', json: { name, args } });
      assert.is(admin.status, 503, `${name} as instance admin got past the checks to the (offline) runner: ${JSON.stringify(admin.body)}`);
      for (const role of ['padmin', 'operator', 'viewer'] as const) {
        const res = await call(`/api/runners/${runner}/commands`, { method: 'POST', json: { name, args }, token: users[role].token });
        const own = runner === runnerA;
        assert.is(res.status, own ? 403 : 404, `${role} × ${name} × ${own ? 'own' : 'other'} runner`);
        assert.is(res.body.error.code, own ? 'forbidden' : 'not_found');
        if (own) assert.match(res.body.error.message, /instance admin/);
      }
    }
  }
  // The project route refuses runner-wide commands whatever the role.
  const viaProject = await call(`/api/projects/${projectA}/commands`, { method: 'POST', json: { name: 'project.inspect', args: { path: '/etc' } }, token: users.padmin.token });
  assert.is(viaProject.status, 400);
  assert.is(viaProject.body.error.code, 'not_a_project_command');
});

test('project commands: another project named in the args → 404; a project not on that runner → 400; a run of another project → 404', async () => {
  const { token } = users.padmin;
  const onB = await call(`/api/runners/${runnerB}/commands`, { method: 'POST', json: { name: 'orchestrator.stop', args: { projectId: projectB } }, token });
  assert.is(onB.status, 404);
  const smuggled = await call(`/api/runners/${runnerA}/commands`, { method: 'POST', json: { name: 'orchestrator.stop', args: { projectId: projectB } }, token });
  assert.is(smuggled.status, 404, 'naming B on its own runner does not help');
  const misrouted = await call(`/api/runners/${runnerB}/commands`, { method: 'POST', json: { name: 'orchestrator.stop', args: { projectId: projectA } }, token });
  assert.is(misrouted.status, 400);
  assert.is(misrouted.body.error.code, 'project_not_on_runner');
  const cancel = await call(`/api/projects/${projectA}/commands`, { method: 'POST', json: { name: 'skill.cancel', args: { runId: runB } }, token });
  assert.is(cancel.status, 404, "B's run cannot be cancelled through A");
  const overridden = await call(`/api/projects/${projectA}/commands`, { method: 'POST', json: { name: 'orchestrator.stop', args: { projectId: projectB } }, token });
  assert.is(overridden.status, 503, 'the path wins: the command goes to A (whose runner is offline), never to B');
});

type Probe = { as?: 'padmin' | 'anonymous'; method?: string; path: string; json?: unknown; expect: number | number[]; check?: (a: Answer) => void };

/** One probe per operation of the OpenAPI document (method + path template). */
function probes(): Record<string, Probe> {
  const zero = '00000000-0000-0000-0000-000000000000';
  return {
    'GET /health': { as: 'anonymous', path: '/health', expect: 200 },
    'GET /api/openapi.json': { as: 'anonymous', path: '/api/openapi.json', expect: 200 },
    // Off on this server (no METRICS_TOKEN / METRICS_ALLOW): absent to everyone, a user token included (test/metrics/).
    'GET /metrics': { path: '/metrics', expect: 404 },
    'POST /api/session': { as: 'anonymous', path: '/api/session', json: { email: server.admin.email, password: 'not the password' }, expect: 401 },
    'DELETE /api/session': { path: '/api/session', expect: [204, 400, 401] },
    'GET /api/me': { path: '/api/me', expect: 200, check: (a) => assert.not.ok(a.body.projects.some((p: { id: string }) => p.id === projectB)) },
    'POST /api/password': { as: 'anonymous', path: '/api/password', json: { token: 'x'.repeat(43), password: 'a new password 123' }, expect: [400, 404] },
    'GET /api/setup': { as: 'anonymous', path: '/api/setup', expect: 200, check: (a) => assert.equal(a.body, { needed: false }) },
    'POST /api/setup': { as: 'anonymous', path: '/api/setup', json: { token: 'x'.repeat(43), name: 'n', email: 'setup@example.test', password: 'a new password 123' }, expect: 409 },
    'GET /api/tokens': { path: '/api/tokens', expect: 200, check: (a) => assert.is(a.body.tokens.length, 1, 'only its own token') },
    'POST /api/tokens': { path: '/api/tokens', json: { name: 'mine' }, expect: 201 },
    'DELETE /api/tokens/{tokenId}': { path: `/api/tokens/${adminTokenId}`, method: 'DELETE', expect: 404 },
    'GET /api/users': { path: '/api/users', expect: 403 },
    'POST /api/users': { path: '/api/users', json: { email: 'new@example.test', name: 'n', instanceAdmin: true }, expect: 403 },
    'PATCH /api/users/{userId}': { path: `/api/users/${users.padmin.id}`, json: { instanceAdmin: true }, expect: 403 },
    'DELETE /api/users/{userId}/sessions': { path: `/api/users/${adminUserId}/sessions`, method: 'DELETE', expect: 403 },
    'GET /api/auth/oidc': { as: 'anonymous', path: '/api/auth/oidc', expect: 200, check: (a) => assert.is(a.body.enabled, false) },
    'GET /api/auth/oidc/start': { as: 'anonymous', path: '/api/auth/oidc/start', expect: 404 },
    'GET /api/auth/oidc/callback': { as: 'anonymous', path: '/api/auth/oidc/callback?code=c&state=s', expect: 404 },
    'POST /api/users/{userId}/password-link': { path: `/api/users/${adminUserId}/password-link`, expect: 403 },
    'GET /api/projects': { path: '/api/projects', expect: 200, check: (a) => assert.equal(a.body.projects.map((p: { id: string }) => p.id), [projectA]) },
    'POST /api/projects': { path: '/api/projects', json: { name: 'Mine', repo: 'a/b', runnerId: runnerB, rootPath: '/' }, expect: 403 },
    'GET /api/projects/{projectId}': { path: `/api/projects/${projectB}`, expect: 404 },
    'PATCH /api/projects/{projectId}': { path: `/api/projects/${projectA}`, json: { runnerId: runnerB, rootPath: '/' }, expect: 403 },
    'DELETE /api/projects/{projectId}': { path: `/api/projects/${projectA}`, method: 'DELETE', expect: 403 },
    'GET /api/projects/{projectId}/members': { path: `/api/projects/${projectB}/members`, expect: 404 },
    'POST /api/projects/{projectId}/members': { path: `/api/projects/${projectB}/members`, json: { email: 'padmin@example.test', role: 'admin' }, expect: 404 },
    'PUT /api/projects/{projectId}/members/{userId}': { path: `/api/projects/${projectB}/members/${users.padmin.id}`, json: { role: 'admin' }, expect: 404 },
    'DELETE /api/projects/{projectId}/members/{userId}': { path: `/api/projects/${projectB}/members/${adminUserId}`, method: 'DELETE', expect: 404 },
    'GET /api/projects/{projectId}/fleet': { path: `/api/projects/${projectB}/fleet`, expect: 404 },
    // A project's pool: B's through B's path (404: no role there); changes to A's own pool need an instance admin (403).
    'GET /api/projects/{projectId}/runners': { path: `/api/projects/${projectB}/runners`, expect: 404 },
    'PUT /api/projects/{projectId}/runners/{runnerId}': { path: `/api/projects/${projectA}/runners/${runnerB}`, json: { rootPath: '/srv/b-clone' }, expect: 403 },
    'DELETE /api/projects/{projectId}/runners/{runnerId}': { path: `/api/projects/${projectA}/runners/${runnerB}`, method: 'DELETE', expect: 403 },
    'GET /api/projects/{projectId}/queue': { path: `/api/projects/${projectB}/queue`, expect: 404 },
    'GET /api/projects/{projectId}/pulls/{number}/record': { path: `/api/projects/${projectB}/pulls/1/record`, expect: 404 },
    'POST /api/projects/{projectId}/commands': { path: `/api/projects/${projectB}/commands`, json: { name: 'orchestrator.stop' }, expect: 404 },
    'GET /api/runners': { path: '/api/runners', expect: 403 },
    'POST /api/runners': { path: '/api/runners', json: { name: 'mine' }, expect: 403 },
    'POST /api/runners/{runnerId}/pairing-code': { path: `/api/runners/${runnerB}/pairing-code`, expect: 403 },
    'GET /api/runners/{runnerId}': { path: `/api/runners/${runnerB}`, expect: 403 },
    'DELETE /api/runners/{runnerId}': { path: `/api/runners/${runnerB}`, method: 'DELETE', expect: 403 },
    'PATCH /api/runners/{runnerId}': { path: `/api/runners/${runnerB}`, json: { tags: ['mine'] }, expect: 403 },
    'POST /api/runners/{runnerId}/commands': { path: `/api/runners/${runnerB}/commands`, json: { name: 'runner.describe' }, expect: 404 },
    'POST /runners/pair': { as: 'anonymous', path: '/runners/pair', json: { code: 'AAAA-AAAA', hostname: 'h', version: '0.1.0', target: 'linux-x64' }, expect: 400 },
    'GET /runners/self': { as: 'anonymous', path: '/runners/self', expect: 401 },
    'GET /svc-runner.mjs.sha256': { as: 'anonymous', path: '/svc-runner.mjs.sha256', expect: 200 },
    'GET /install-runner.sh': { as: 'anonymous', path: '/install-runner.sh', expect: 200 },
    // An action link is a person's, in a browser: an API token is refused before the link is read
    // (a session with another user's or a forged link: test/act/links.test.ts).
    'GET /api/act/{token}': { path: `/api/act/${'A'.repeat(40)}.${'B'.repeat(43)}`, expect: 403 },
    'POST /api/act/{token}': { path: `/api/act/${'A'.repeat(40)}.${'B'.repeat(43)}`, expect: 403 },
    'GET /api/notifications': { path: '/api/notifications', expect: 200, check: (a) => assert.ok(a.body.notifications.every((n: { projectId: string }) => n.projectId === projectA)) },
    'POST /api/notifications/read': { path: '/api/notifications/read', json: { ids: ['999999'] }, expect: 200, check: (a) => assert.is(a.body.marked, 0) },
    'GET /api/notifications/channels': { path: '/api/notifications/channels', expect: 403 },
    'POST /api/notifications/channels': { path: '/api/notifications/channels', json: { type: 'slack', webhookUrl: 'https://hooks.example.com/services/x' }, expect: 403 },
    'DELETE /api/notifications/channels/{channelId}': { path: `/api/notifications/channels/${zero}`, method: 'DELETE', expect: 403 },
    'POST /api/notifications/channels/{channelId}/resume': { path: `/api/notifications/channels/${zero}/resume`, expect: 403 },
    'GET /api/runs': { path: `/api/runs?projectId=${projectB}`, expect: 404 },
    'GET /api/runs/{runId}': { path: `/api/runs/${runB}`, expect: 404 },
    'GET /api/failed-starts': { path: `/api/failed-starts?projectId=${projectB}`, expect: 404 },
    'GET /api/settings': { path: '/api/settings', expect: 403 },
    'PATCH /api/settings': { path: '/api/settings', json: {}, expect: 403 },
    'GET /api/settings/encryption-key': { path: '/api/settings/encryption-key', expect: 403 },
    'GET /api/audit': { path: '/api/audit', expect: 403 },
    'GET /api/audit/verification': { path: '/api/audit/verification', expect: 403 },
    'GET /api/schedules': {
      path: '/api/schedules',
      expect: 200,
      check: (a) => {
        assert.equal(a.body.jobs, [], 'system jobs are for instance admins');
        assert.ok(a.body.schedules.every((x: { projectId: string }) => x.projectId === projectA), "only its own projects' schedules");
      },
    },
    'POST /api/schedules/{name}/run': { path: '/api/schedules/audit.verify/run', expect: 403 },
    'GET /api/prices': { path: '/api/prices', expect: 200 },
    'GET /api/prices/{model}': { path: '/api/prices/claude-opus-4-5', expect: [200, 404] },
    'PUT /api/prices/{model}': { path: '/api/prices/claude-opus-4-5', json: {}, expect: 403 },
    'GET /api/cost': { path: `/api/cost?groupBy=project&projectId=${projectB}`, expect: 404 },
    'GET /api/cost/unknown-models': { path: '/api/cost/unknown-models', expect: 200 },
    'GET /api/sessions': { path: `/api/sessions?projectId=${projectB}`, expect: 404 },
    'GET /api/sessions/{sessionId}': { path: `/api/sessions/${sessionB}`, expect: 404 },
    'GET /api/live': { path: '/api/live', expect: 426, check: (a) => assert.is(a.body.error.code, 'upgrade_required') },
    'GET /api/activity': { path: `/api/activity?projectId=${projectB}`, expect: 404 },
    'GET /api/events': { path: `/api/events?projectId=${projectB}`, expect: 404 },
    'GET /api/events/{eventId}': { path: `/api/events/${eventB}`, expect: 404 },
    'GET /api/projects/{projectId}/codehost-mode': { path: `/api/projects/${projectB}/codehost-mode`, expect: 404 },
    'GET /api/projects/{projectId}/budget': { path: `/api/projects/${projectB}/budget`, expect: 404 },
    'PUT /api/projects/{projectId}/budget': { path: `/api/projects/${projectB}/budget`, json: { budgetUsd: 0, action: 'stop' }, expect: 404 },
    'PUT /api/projects/{projectId}/codehost': { path: `/api/projects/${projectB}/codehost`, json: { kind: 'gitlab', baseUrl: 'https://gitlab.com', projectPath: 'g/app' }, expect: 404 },
    'GET /api/projects/{projectId}/codehost': { path: `/api/projects/${projectB}/codehost`, expect: 404 },
    'GET /api/webhooks/catalogue': { path: '/api/webhooks/catalogue', expect: 403 },
    'GET /api/webhooks/allowlist': { path: '/api/webhooks/allowlist', expect: 403 },
    'PUT /api/webhooks/allowlist': { path: '/api/webhooks/allowlist', json: { text: '0.0.0.0/0' }, expect: 403 },
    'GET /api/webhooks': { path: '/api/webhooks', expect: 403 },
    'POST /api/webhooks': { path: '/api/webhooks', json: { url: 'https://x.example.com', events: ['pr.opened'] }, expect: 403 },
    'GET /api/webhooks/{webhookId}': { path: `/api/webhooks/${webhookId}`, expect: 403 },
    'PATCH /api/webhooks/{webhookId}': { path: `/api/webhooks/${webhookId}`, json: { url: 'https://evil.example.com' }, expect: 403 },
    'DELETE /api/webhooks/{webhookId}': { path: `/api/webhooks/${webhookId}`, method: 'DELETE', expect: 403 },
    'POST /api/webhooks/{webhookId}/rotate': { path: `/api/webhooks/${webhookId}/rotate`, expect: 403 },
    'POST /api/webhooks/{webhookId}/test': { path: `/api/webhooks/${webhookId}/test`, expect: 403 },
    'POST /api/webhooks/{webhookId}/resume': { path: `/api/webhooks/${webhookId}/resume`, expect: 403 },
    'GET /api/webhooks/{webhookId}/deliveries': { path: `/api/webhooks/${webhookId}/deliveries`, expect: 403 },
    'GET /api/webhooks/{webhookId}/deliveries/{deliveryId}': { path: `/api/webhooks/${webhookId}/deliveries/${zero}`, expect: 403 },
    'POST /api/webhooks/{webhookId}/deliveries/{deliveryId}/redeliver': { path: `/api/webhooks/${webhookId}/deliveries/${zero}/redeliver`, expect: 403 },
    'POST /api/webhooks/{webhookId}/recover': { path: `/api/webhooks/${webhookId}/recover`, json: { since: new Date(Date.now() - 3600_000).toISOString() }, expect: 403 },
    // Inbound triggers: B's trigger through A's path (where the caller IS admin) and through B's own path.
    'GET /api/projects/{projectId}/triggers': { path: `/api/projects/${projectB}/triggers`, expect: 404 },
    'POST /api/projects/{projectId}/triggers': { path: `/api/projects/${projectB}/triggers`, json: { name: 'x', action: 'next_round' }, expect: 404 },
    'GET /api/projects/{projectId}/triggers/{triggerId}': { path: `/api/projects/${projectA}/triggers/${triggerB}`, expect: 404 },
    'PATCH /api/projects/{projectId}/triggers/{triggerId}': { path: `/api/projects/${projectA}/triggers/${triggerB}`, json: { name: 'mine' }, expect: 404 },
    'DELETE /api/projects/{projectId}/triggers/{triggerId}': { path: `/api/projects/${projectA}/triggers/${triggerB}`, method: 'DELETE', expect: 404 },
    'POST /api/projects/{projectId}/triggers/{triggerId}/enable': { path: `/api/projects/${projectA}/triggers/${triggerB}/enable`, expect: 404 },
    'POST /api/projects/{projectId}/triggers/{triggerId}/disable': { path: `/api/projects/${projectA}/triggers/${triggerB}/disable`, expect: 404 },
    'POST /api/projects/{projectId}/triggers/{triggerId}/rotate': { path: `/api/projects/${projectA}/triggers/${triggerB}/rotate`, expect: 404 },
    'POST /api/projects/{projectId}/triggers/{triggerId}/dry-run': { path: `/api/projects/${projectB}/triggers/${triggerB}/dry-run`, json: { payload: {} }, expect: 404 },
    'GET /api/projects/{projectId}/triggers/{triggerId}/deliveries': { path: `/api/projects/${projectA}/triggers/${triggerB}/deliveries`, expect: 404 },
    // Project schedules: B's schedule through A's path (where the caller IS admin) and through B's own path.
    'GET /api/projects/{projectId}/schedules': { path: `/api/projects/${projectB}/schedules`, expect: 404 },
    'POST /api/projects/{projectId}/schedules': { path: `/api/projects/${projectB}/schedules`, json: { name: 'x', cron: '* * * * *', skill: 'x' }, expect: 404 },
    'GET /api/projects/{projectId}/schedules/{scheduleId}': { path: `/api/projects/${projectA}/schedules/${scheduleB}`, expect: 404 },
    'PATCH /api/projects/{projectId}/schedules/{scheduleId}': { path: `/api/projects/${projectA}/schedules/${scheduleB}`, json: { name: 'mine' }, expect: 404 },
    'DELETE /api/projects/{projectId}/schedules/{scheduleId}': { path: `/api/projects/${projectA}/schedules/${scheduleB}`, method: 'DELETE', expect: 404 },
    'POST /api/projects/{projectId}/schedules/{scheduleId}/run': { path: `/api/projects/${projectB}/schedules/${scheduleB}/run`, expect: 404 },
    // GitHub Apps are instance-wide: instance admins only.
    'GET /api/github-apps': { path: '/api/github-apps', expect: 403 },
    'POST /api/github-apps': { path: '/api/github-apps', json: { name: 'mine' }, expect: 403 },
    'GET /api/github-apps/{appId}': { path: `/api/github-apps/${githubApp}`, expect: 403 },
    'PATCH /api/github-apps/{appId}': { path: `/api/github-apps/${githubApp}`, json: { name: 'mine' }, expect: 403 },
    'DELETE /api/github-apps/{appId}': { path: `/api/github-apps/${githubApp}`, method: 'DELETE', expect: 403 },
    'POST /api/github-apps/{appId}/rotate': { path: `/api/github-apps/${githubApp}/rotate`, expect: 403 },
    'GET /api/github-apps/{appId}/deliveries': { path: `/api/github-apps/${githubApp}/deliveries`, expect: 403 },
    'GET /api/github-apps/{appId}/check': { path: `/api/github-apps/${githubApp}/check`, expect: 403 },
    'POST /hooks/github/{appPublicId}': { as: 'anonymous', path: `/hooks/github/${githubAppPublic}`, json: {}, expect: 401, check: (a) => assert.is(a.body, null, 'no detail') },
    'POST /hooks/gitlab/{appPublicId}': { as: 'anonymous', path: '/hooks/gitlab/AAAAAAAAAAAAAAAAAAAAAAAA', json: {}, expect: 404, check: (a) => assert.is(a.body, null, 'no detail') },
    'POST /hooks/{publicId}': { as: 'anonymous', path: `/hooks/${triggerBPublic}`, json: {}, expect: 401, check: (a) => assert.is(a.body, null, 'no detail') },
  };
}

let adminUserId = '';
let adminTokenId = '';

/** What a project admin of A must never change: everything visible to the instance admin outside A's own fields. */
async function snapshot() {
  const get = async (path: string) => (await call(path)).body;
  return {
    projects: await get('/api/projects'),
    membersB: await get(`/api/projects/${projectB}/members`),
    users: await get('/api/users'),
    runners: ((await get('/api/runners')).runners as { id: string; status: string; revokedAt: string | null; tags: string[] }[]).map((r) => [r.id, r.revokedAt, r.tags]),
    poolA: await get(`/api/projects/${projectA}/runners`),
    poolB: await get(`/api/projects/${projectB}/runners`),
    tokens: ((await get('/api/tokens')).tokens as { lastUsedAt?: string }[]).map(({ lastUsedAt: _, ...t }) => t), // using it is not changing it
    settings: await get('/api/settings'),
    webhooks: await get('/api/webhooks'),
    allowlist: await get('/api/webhooks/allowlist'),
    run: await get(`/api/runs/${runB}`),
    triggersB: await get(`/api/projects/${projectB}/triggers`),
    schedulesB: await get(`/api/projects/${projectB}/schedules`),
    githubApps: await get('/api/github-apps'),
    githubDeliveries: await get(`/api/github-apps/${githubApp}/deliveries`),
    budgetB: await get(`/api/projects/${projectB}/budget`),
    sessionB: await get(`/api/sessions/${sessionB}`),
  };
}

test('every OpenAPI operation, called by a project admin with ids it has no rights on: refused, and nothing outside its project changes', async () => {
  const me = await call('/api/me');
  adminUserId = me.body.user.id;
  adminTokenId = (await call('/api/tokens')).body.tokens[0].id;
  const doc = (await call('/api/openapi.json')).body;
  const operations = Object.entries(doc.paths as Record<string, Record<string, unknown>>).flatMap(([path, ops]) => Object.keys(ops).map((m) => `${m.toUpperCase()} ${path}`));
  const table = probes();
  assert.equal(operations.filter((o) => !table[o]), [], 'every operation has a probe here');
  assert.equal(Object.keys(table).filter((o) => !operations.includes(o)), [], 'every probe names an operation that exists');
  const before = await snapshot();
  const order = Object.keys(table).sort((a, b) => Number(a.startsWith('DELETE /api/session')) - Number(b.startsWith('DELETE /api/session')));
  for (const op of order) {
    const p = table[op];
    const method = p.method ?? op.split(' ')[0];
    const res = await call(p.path, { method, json: p.json ?? (['POST', 'PUT', 'PATCH'].includes(method) ? {} : undefined), token: p.as === 'anonymous' ? 'svc_pat_not_a_token' /* public routes ignore it */ : users.padmin.token });
    const expected = Array.isArray(p.expect) ? p.expect : [p.expect];
    assert.ok(expected.includes(res.status), `${op} → ${res.status} ${JSON.stringify(res.body).slice(0, 200)} (expected ${expected.join(' or ')})`);
    p.check?.(res);
  }
  const after = await snapshot();
  assert.equal(after, before, 'nothing outside project A changed');
  assert.is((await call('/api/me')).status, 200, "the admin's token still works");
});

test.run();

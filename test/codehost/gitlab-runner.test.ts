// A GitLab project end to end (issue 42; docs/gitlab.md): the real server, the real runner bundle (which
// has no GitLab token of its own) and the fake GitLab under a path prefix. After PUT
// /api/projects/:id/codehost with a project access token, the runner gets the project with `host` in its
// watch list and the stored token in the frame (memory only), polls the nested-group project with it,
// the server's queue shows the GitLab issues, and issue.create / pr.inspect go to GitLab with that token.
// The token is in no runner file and no audit record, nor in the server's or the runner's log.
// needs: git
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { openPglite } from '../../functions/lib/db/pglite.ts';
import { openPostgres } from '../../functions/lib/db/postgres.ts';
import { sql } from '../../functions/lib/db/port.ts';
import { gitlabFake } from '../fakes/gitlab.ts';
import type { GitLabFake } from '../fakes/gitlab.ts';
import type { RunningServer } from '../helpers/server.ts';
import { killDaemons, runCli, startDaemon, waitUntil } from '../runner/_harness.ts';
import { gitlabProject } from './_gitlab.ts';
import type { Daemon, Sandbox } from '../runner/_harness.ts';

const PATH = 'acme/platform/svc-app';
let gl: GitLabFake;
let dbEnv: { env: Record<string, string>; cleanup: () => Promise<void> };
let server: RunningServer;
let sb: Sandbox;
let daemon: Daemon;
let projectId: string;
const hook = { url: '', secret: '' };
let root: string;

const command = async (name: string, args: Record<string, unknown> = {}) => {
  const res = await server.api(`/api/projects/${projectId}/commands`, { method: 'POST', json: { name, args } });
  return { status: res.status, body: await res.json() };
};

test.before(async () => {
  gl = await gitlabFake({ prefix: '/gitlab' });
  gl.project(PATH);
  gl.addIssue(PATH, { title: 'Queue me', labels: ['svc'] });
  // debug: the server logs when a delivery's collector.poll was answered and recorded (the last test waits for it)
  ({ dbEnv, server, sb, projectId, root, codehost: { webhookUrl: hook.url, webhookSecret: hook.secret } } = await gitlabProject(gl, PATH, { keyByte: 5, serverEnv: { LOG_LEVEL: 'debug' } }));
  daemon = startDaemon(sb, { SVC_PR_POLL_MS: '300', SVC_QUEUE_POLL_MS: '300' });
});
test.after(async () => {
  await killDaemons();
  await server?.cleanup();
  await dbEnv?.cleanup();
  sb?.cleanup();
  await gl?.close();
});

const polls = () => gl.requests.filter((r) => r.path.startsWith('/api/v4/projects/acme%2Fplatform%2Fsvc-app/issues?') && r.status === 200);

test("the runner polls the GitLab project with the server's stored token; the server's queue shows its issues", async () => {
  await waitUntil(() => polls().length > 0, 30_000, () => `a poll of the GitLab project\n${daemon.output().slice(-2000)}`);
  assert.ok(polls().every((r) => r.token === gl.token));
  await waitUntil(async () => {
    const q = await (await server.api(`/api/projects/${projectId}/queue`)).json();
    return JSON.stringify(q).includes('Queue me');
  }, 30_000, 'the queue on the server');
});

test('issue.create and pr.inspect reach GitLab with the stored token', async () => {
  const created = await command('issue.create', { title: 'Filed on GitLab', body: 'from svc', labels: ['svc'] });
  assert.is(created.status, 200, JSON.stringify(created.body));
  const result = created.body.result ?? created.body;
  assert.match(JSON.stringify(result), /\/-\/issues\/2/);
  const post = gl.requests.find((r) => r.method === 'POST' && r.path.endsWith('/issues'))!;
  assert.equal([post.token, post.body.labels], [gl.token, 'svc']);
  const mr = gl.addMr(PATH, { title: 'Fix', source: 'svc/run-x', sha: 'd'.repeat(40) });
  gl.pipeline(PATH, mr.sha, { test: 'success' });
  const inspected = await command('pr.inspect', { number: mr.iid });
  assert.is(inspected.status, 200, JSON.stringify(inspected.body));
  assert.match(JSON.stringify(inspected.body), /"state":"passed"/);
  assert.equal(gl.unexpected, []);
});

// The body of GitLab's documented "Merge request events" example, trimmed to the fields svc reads.
const mrHook = (iid: number) => ({ object_kind: 'merge_request', event_type: 'merge_request', project: { id: 1, path_with_namespace: PATH }, object_attributes: { iid, action: 'open', state: 'opened', source_branch: 'svc/run-x', target_branch: 'main' } });
const send = (token: string, uuid: string, body: unknown = mrHook(1), event = 'Merge Request Hook') =>
  fetch(hook.url, { method: 'POST', headers: { 'content-type': 'application/json', 'x-gitlab-token': token, 'x-gitlab-event': event, 'x-gitlab-event-uuid': uuid }, body: JSON.stringify(body) });

test('the webhook: a wrong X-Gitlab-Token is 401 (recorded), a delivery 202 once and 200 duplicate again, over 256 KB 413, an unknown id 404', async () => {
  const wrong = await send('not-the-secret', 'u-1');
  assert.is(wrong.status, 401);
  assert.is(await wrong.text(), '');
  const polledBefore = gl.requests.length;
  const first = await send(hook.secret, 'u-1');
  assert.is(first.status, 202, await first.clone().text());
  assert.equal(await first.json(), { deliveryId: 'u-1', status: 'accepted', projects: 1 });
  const again = await send(hook.secret, 'u-1');
  assert.equal([again.status, (await again.json()).status], [200, 'duplicate']);
  await waitUntil(() => gl.requests.length > polledBefore, 20_000, 'the runner polled after the hook');
  const big = await send(hook.secret, 'u-2', { pad: 'x'.repeat(300 * 1024) });
  assert.is(big.status, 413);
  const unknown = await fetch(hook.url.replace(/[^/]+$/, 'A'.repeat(24)), { method: 'POST', headers: { 'x-gitlab-token': hook.secret }, body: '{}' });
  assert.is(unknown.status, 404);
  const other = await send(hook.secret, 'u-3', { object_kind: 'wiki_page' }, 'Wiki Page Hook');
  assert.equal(await other.json(), { deliveryId: 'u-3', status: 'accepted', projects: 0 });
});

// The orchestrator's merge step (skills/svc-orchestrator/SKILL.md step 3): `svc-runner pr-merge <N>` run in
// the project asks the daemon over its local socket; the daemon merges through GitLab with the server's
// token (the runner has none of its own), only with svc's approval, GitLab's refusal said on stderr.
test('svc-runner pr-merge: refused without approval and while GitLab wants more approvals (exit 1, the reason), then merged', async () => {
  const mr = gl.addMr(PATH, { title: 'Merge me', source: 'svc/w1/issue-3', sha: 'a'.repeat(40) });
  mr.requiredApprovals = 2;
  const merge = () => runCli(sb, ['pr-merge', String(mr.iid), '--project-root', join(root, 'src')]);
  mkdirSync(join(root, 'src'), { recursive: true });
  await waitUntil(() => existsSync(join(sb.env.XDG_STATE_HOME, 'svc', 'local', 'runner.sock')), 20_000, 'the local socket');
  assert.is(statSync(join(sb.env.XDG_STATE_HOME, 'svc', 'local', 'runner.sock')).mode & 0o777, 0o600);
  assert.is(statSync(join(sb.env.XDG_STATE_HOME, 'svc', 'local')).mode & 0o777, 0o700);

  const unapproved = await merge();
  assert.is(unapproved.status, 1, unapproved.stdout);
  assert.match(unapproved.stderr, new RegExp(`merge request !${mr.iid} is not approved in svc.*\\[not_approved\\]`));

  const approved = await command('pr.approve', { number: mr.iid });
  assert.is(approved.status, 200, JSON.stringify(approved.body));
  assert.equal(mr.approvedBy, ['svc-bot']);
  const refused = await merge();
  assert.is(refused.status, 1, refused.stdout);
  assert.match(refused.stderr, /GitLab refuses to merge it now: approvals missing.*\[codehost_405\]/);
  assert.is(mr.state, 'opened');

  mr.approvedBy.push('ann');
  const merged = await merge();
  assert.is(merged.status, 0, merged.stderr);
  assert.equal(JSON.parse(merged.stdout), { pr: mr.iid, merged: true, sha: 'e'.repeat(40) });
  assert.is(mr.state, 'merged');
  const puts = gl.requests.filter((r) => r.method === 'PUT' && r.path.endsWith(`/merge_requests/${mr.iid}/merge`));
  assert.equal(puts.map((r) => [r.status, r.token]), [[405, gl.token], [200, gl.token]]);
  assert.not.ok(merged.stdout.includes(gl.token) || refused.stderr.includes(gl.token));

  const elsewhere = await runCli(sb, ['pr-merge', String(mr.iid), '--project-root', sb.dir]);
  assert.is(elsewhere.status, 2, 'not inside a git project');
  const other = join(sb.dir, 'other');
  execFileSync('git', ['init', '-q', other]);
  const unknown = await runCli(sb, ['pr-merge', String(mr.iid), '--project-root', other]);
  assert.equal([unknown.status, /is not a project on this runner's watch list/.test(unknown.stderr)], [1, true]);
  assert.equal(gl.unexpected, []);
});

test('the token is in no runner file, no audit record, no log', async () => {
  // The hook's poll (u-1) is recorded once the runner answered it: wait for that before stopping the runner.
  await waitUntil(() => /collector\.poll answered.*outcome=polled/.test(server.output()), 20_000, () => `u-1's poll recorded\n${server.output().slice(-2000)}`);
  await daemon.kill(); // its state files are written atomically (temp + rename): read them at rest
  const noDaemon = await runCli(sb, ['pr-merge', '1', '--project-root', root]);
  assert.equal([noDaemon.status, /the runner daemon is not running/.test(noDaemon.stderr)], [1, true]);
  const files: string[] = [];
  const walk = (d: string) => {
    for (const n of readdirSync(d)) {
      const p = join(d, n);
      if (statSync(p).isDirectory()) walk(p);
      else if (statSync(p).isFile()) files.push(p);
    }
  };
  walk(sb.dir);
  for (const f of files) assert.not.ok(readFileSync(f, 'utf8').includes(gl.token), f);
  const audit = await (await server.api('/api/audit?limit=200')).text();
  assert.not.ok(audit.includes(gl.token));
  assert.not.ok(server.output().includes(gl.token));
  assert.not.ok(daemon.output().includes(gl.token));
  await server.stop('SIGTERM');
  const db = dbEnv.env.DATABASE_URL ? await openPostgres(dbEnv.env.DATABASE_URL, 1) : await openPglite(dbEnv.env.PGLITE_DATA_DIR);
  try {
    const rows = await db.query<{ delivery_id: string | null; event: string; outcome: string }>(sql`select delivery_id, event, outcome from codehost_deliveries where project_id = ${projectId} order by created_at, delivery_id`);
    assert.equal(rows.map((r) => [r.delivery_id, r.outcome]).sort(), [[null, 'unauthorized'], ['u-1', 'polled'], ['u-3', 'ignored']].sort() as any);
    const commands = await db.query(sql`select args, result from runner_commands`);
    assert.not.ok(JSON.stringify(commands).includes(gl.token), 'runner_commands');
  } finally {
    await db.close();
  }
});

test.run();

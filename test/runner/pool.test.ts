// Runner pools on the runner (issue #37; docs/runner.md "Runner pools"), with the real bundle, real tmux,
// real git and the headless agent fakes: the skills.pool capability and the `capacity` frame (after hello,
// then only when the number of starting+running runs changes; an older server's error frame only logged),
// skill.run with a server-chosen `runId` (used as the run's id; a resend — also a concurrent one — answers
// the same run, never a second), and a watch-list entry with `pool: true`: skill runs there, but no
// code-host polling, no `.svc/events.jsonl` tailing and `not_primary` for the orchestrator's commands.
// needs: tmux
import { appendFileSync, existsSync, mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { githubFake } from '../fakes/github.ts';
import type { GitHubFake } from '../fakes/github.ts';
import { runCli, waitUntil } from './_harness.ts';
import { PROFILES, skillFleet } from './_skills.ts';
import type { SkillFleet } from './_skills.ts';

const RUN_ENV = { SVC_RUNS_POLL_MS: '100' };

let f: SkillFleet;
let clone: string;
test.before.each(async () => {
  f = await skillFleet('pool');
  clone = join(f.sb.dir, 'work', 'pool-clone');
  f.git(f.sb.dir, 'clone', '-q', f.root, clone);
  // p1: this runner is its primary; p2: this runner is only a pool member, with its own clone.
  f.fake.options.projects = [{ id: 'p1', root: f.root }, { id: 'p2', root: clone, pool: true } as { id: string; root: string }];
});
test.after.each(async () => {
  await f.cleanup();
});

const capacities = () => f.conn!.frames.filter((x) => x.type === 'capacity');

test('hello announces skills.pool; capacity follows hello, then changes only: up while runs start or run, back to 0; never above maxConcurrentRuns; an old server\'s error frame is only logged', async () => {
  const conn = await f.start({ profiles: PROFILES(f.agentDir), skills: { maxConcurrentRuns: 1 } }, RUN_ENV);
  const hello = conn.frames.find((x) => x.type === 'hello');
  assert.ok(hello.capabilities.includes('skills.pool'), JSON.stringify(hello.capabilities));
  await waitUntil(() => capacities().length >= 1, 5000, 'the first capacity frame');
  assert.equal(capacities()[0], { type: 'capacity', maxConcurrentRuns: 1, running: 0 });
  assert.ok(conn.frames.indexOf(capacities()[0]) > conn.frames.indexOf(hello), 'after hello');

  const a = (await conn.command('skill.run', { projectId: 'p2', skill: 'slow', args: ['a'] })).data;
  const b = (await conn.command('skill.run', { projectId: 'p2', skill: 'slow', args: ['b'] })).data;
  assert.equal([a.state, b.state], ['running', 'queued']);
  await f.waitState(a.runId, 'succeeded', 20_000);
  await f.waitState(b.runId, 'succeeded', 20_000);
  await waitUntil(() => capacities().at(-1)?.running === 0 && capacities().some((c) => c.running === 1), 10_000, () => `capacity back to 0: ${JSON.stringify(capacities())}`);
  const seq = capacities().map((c) => c.running);
  assert.ok(seq.every((n) => n <= 1), JSON.stringify(seq));
  for (let i = 1; i < seq.length; i++) assert.is.not(seq[i], seq[i - 1], `only changes are sent: ${JSON.stringify(seq)}`);
  assert.ok(capacities().every((c) => c.maxConcurrentRuns === 1));

  // A server without runner pools refuses the unknown frame with an error frame: logged, nothing more.
  conn.send({ type: 'error', code: 'invalid_frame', message: 'capacity: unknown frame type' });
  await f.daemon!.waitFor(/server error frame: invalid_frame/);
  const ping = await conn.command('runner.ping', {});
  assert.is(ping.ok, true);
  assert.is(conn.closedAt, null, 'the connection stays up');

  // A new connection hears the capacity again.
  conn.ws.close(4000, 'test reconnect');
  const next = await f.fake.waitConns(2, 15_000);
  await waitUntil(() => next.frames.some((x) => x.type === 'capacity'), 10_000, 'capacity on the new connection');
  assert.equal(next.frames.find((x) => x.type === 'capacity'), { type: 'capacity', maxConcurrentRuns: 1, running: 0 });
});

test('skill.run with runId: the run takes that id (its run directory, SVC_RUN_ID, events) in the pool clone; the same runId again — also at the same time — answers that run and starts no second one; the id in another project is refused', async () => {
  const conn = await f.start({ profiles: PROFILES(f.agentDir) }, RUN_ENV);
  const runId = '0000pool1-abcdef01';
  const [first, resent] = await Promise.all([
    conn.command('skill.run', { projectId: 'p2', skill: 'slow', args: ['x'], runId }),
    conn.command('skill.run', { projectId: 'p2', skill: 'slow', args: ['x'], runId }),
  ]);
  assert.is(first.ok, true, JSON.stringify(first));
  assert.equal([first.data.runId, resent.data.runId], [runId, runId]);
  assert.ok(existsSync(join(f.runDir(runId), 'run.json')), 'the run directory is named by the runId');
  assert.is(f.readRunFile(runId, 'run.json').root, clone);

  await f.waitState(runId, 'succeeded', 20_000);
  // Sent again later, even after the skill was uninstalled: the run as it stands, not a refusal.
  rmSync(join(f.sb.home, '.claude', 'skills', 'slow'), { recursive: true, force: true });
  const after = await conn.command('skill.run', { projectId: 'p2', skill: 'slow', args: ['x'], runId });
  assert.equal([after.ok, after.data.runId, after.data.state, after.data.profileId, after.data.projectId], [true, runId, 'succeeded', 'cc', 'p2'], JSON.stringify(after));
  const starts = f.agentStarts();
  assert.is(starts.length, 1, 'one agent start for three skill.run');
  assert.equal([starts[0].env.SVC_RUN_ID, starts[0].cwd], [runId, clone]);
  assert.equal(f.states(runId), ['queued', 'starting', 'running', 'succeeded']);

  const other = await conn.command('skill.run', { projectId: 'p1', skill: 'echo', runId });
  assert.equal([other.ok, other.error?.code], [false, 'run_exists']);
  assert.is(f.agentStarts().length, 1);
  const bad = await conn.command('skill.run', { projectId: 'p2', skill: 'echo', runId: '../escape' });
  assert.equal([bad.ok, bad.error?.code], [false, 'invalid_args']);
});

test('a pool-only project: skill.cancel and project.refresh work; orchestrator, slot, terminal and issue commands answer not_primary; its .svc/events.jsonl is not tailed while the primary project\'s is', async () => {
  const conn = await f.start({ profiles: PROFILES(f.agentDir) }, RUN_ENV);
  for (const [name, args] of [
    ['orchestrator.start', { projectId: 'p2' }],
    ['orchestrator.status', { projectId: 'p2' }],
    ['slot.stop', { projectId: 'p2', slot: 'a' }],
    ['issues.refresh', { projectId: 'p2' }],
  ] as const) {
    const r = await conn.command(name, args);
    assert.equal([r.ok, r.error?.code], [false, 'not_primary'], `${name}: ${JSON.stringify(r)}`);
    assert.match(r.error.message, /primary runner/);
  }
  const status = await conn.command('orchestrator.status', { projectId: 'p1' });
  assert.is(status.ok, true, 'the primary project is served as before');
  const refresh = await conn.command('project.refresh', { projectId: 'p2' });
  assert.is(refresh.ok, true, JSON.stringify(refresh));
  const run = (await conn.command('skill.run', { projectId: 'p2', skill: 'hang' })).data;
  const cancel = await conn.command('skill.cancel', { projectId: 'p2', runId: run.runId }, 20_000);
  assert.equal([cancel.ok, cancel.data.state], [true, 'cancelled']);

  const line = (root: string, i: number) => {
    mkdirSync(join(root, '.svc'), { recursive: true });
    appendFileSync(join(root, '.svc', 'events.jsonl'), JSON.stringify({ v: 1, time: new Date().toISOString(), type: 'round.tick', data: { i } }) + '\n');
  };
  line(clone, 1);
  line(f.root, 2);
  const fromFile = () => f.fake.received.filter((e) => (e.payload as any).origin === 'events.jsonl');
  await waitUntil(() => fromFile().some((e) => (e.payload as any).data?.i === 2), 15_000, 'the primary project\'s line');
  line(clone, 3);
  line(f.root, 4);
  await waitUntil(() => fromFile().some((e) => (e.payload as any).data?.i === 4), 15_000, 'the second primary line');
  assert.equal([...new Set(fromFile().map((e) => (e.payload as any).project))], ['p1'], 'nothing from the pool clone');

  // The watch list is kept in runner.json with its pool mark, and the file still loads.
  assert.equal(f.sb.readConfig().projects.map((p: any) => [p.id, p.pool ?? false]), [['p1', false], ['p2', true]]);
  const cli = await runCli(f.sb, ['status'], f.env);
  assert.match(cli.stdout, /^projects: 2 \(1 as a pool member only: skill runs\)$/m, cli.stdout + cli.stderr);
});

test('the code host is polled for the primary project\'s repository only, not for a pool-only entry\'s', async () => {
  const gh: GitHubFake = await githubFake();
  try {
    gh.repo('octo/app');
    gh.repo('octo/pool');
    f.fake.options.projects = [{ id: 'p1', root: f.root, repo: 'octo/app' } as { id: string; root: string }, { id: 'p2', root: clone, repo: 'octo/pool', pool: true } as { id: string; root: string }];
    const profiles = PROFILES(f.agentDir).map((p) => ({ ...p, env: { ...p.env, GH_TOKEN: gh.token } }));
    await f.start({ profiles, codehost: { apiUrl: gh.url } }, { ...RUN_ENV, SVC_PR_POLL_MS: '150', SVC_QUEUE_POLL_MS: '150' });
    const polls = (repo: string) => gh.requests.filter((r) => r.path.startsWith(`/repos/${repo}/`)).length;
    await waitUntil(() => polls('octo/app') >= 4, 30_000, 'polls of the primary project\'s repository');
    assert.is(polls('octo/pool'), 0, 'the pool entry\'s repository is not polled');
  } finally {
    await gh.close();
  }
});

test.run();

// Runner pools end to end (issue #37): the real server (PGlite or PostgreSQL per SVC_TEST_DB) and three
// real runner bundles, each with its own home, paired through the real flow (`svc-runner pair --tags`),
// one git repository cloned three times, real tmux, the fake headless `claude`. Runner A is the
// project's primary runner, B and C are pool members added through the API; each takes 2 runs at once.
// Work arrives through signed trigger calls with the `pool` target. The runs' truth on the runners is
// their run directories; on the server, GET /api/runs and the trigger deliveries.
// needs: tmux
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { startServer } from '../helpers/server.ts';
import type { RunningServer } from '../helpers/server.ts';
import { killDaemons, runCli, sandbox, startDaemon, waitUntil } from '../runner/_harness.ts';
import type { Daemon, Sandbox } from '../runner/_harness.ts';
import { FAKE_HEADLESS, SKILLS } from '../runner/_skills.ts';
import { KEY, createTrigger, deliveries, post, skillTrigger } from '../triggers/_harness.ts';

interface Runner {
  name: string;
  sb: Sandbox;
  root: string;
  id: string;
  socket: string;
  daemon: Daemon;
}

let server: RunningServer;
let origin: string;
let projectId: string;
const runners: Record<'a' | 'b' | 'c', Runner> = {} as never;
const GIT_ENV = { GIT_AUTHOR_NAME: 't', GIT_AUTHOR_EMAIL: 't@example.com', GIT_COMMITTER_NAME: 't', GIT_COMMITTER_EMAIL: 't@example.com' };

const api = async (path: string, init: { method?: string; json?: unknown } = {}) => {
  const res = await server.api(path, { method: init.method ?? 'GET', json: init.json });
  return { status: res.status, body: res.status === 204 ? null : await res.json() };
};
/** Wait for `check` to give a value; on timeout, fail with `what` and (when given) the state `explain` reads. */
async function until<T>(check: () => Promise<T | undefined | false>, ms: number, what: string, explain?: () => Promise<string>): Promise<T> {
  let got: T | undefined | false;
  try {
    await waitUntil(async () => Boolean((got = await check())), ms, what);
  } catch (err) {
    throw new Error(`${(err as Error).message}${explain ? `\n${await explain()}` : ''}`);
  }
  return got as T;
}
const runs = async () => (await api(`/api/runs?projectId=${projectId}&limit=200`)).body.runs as Record<string, any>[];
/** Run ids whose directory exists on the runner (one directory per run it was given). */
const runDirs = (r: Runner) => {
  const dir = join(r.sb.env.XDG_STATE_HOME, 'svc', 'runs');
  return existsSync(dir) ? readdirSync(dir) : [];
};

async function startRunner(key: 'a' | 'b' | 'c', tags: string[]): Promise<Runner> {
  const sb = sandbox();
  const root = join(sb.dir, 'work', 'repo');
  mkdirSync(join(sb.dir, 'work'), { recursive: true });
  execFileSync('git', ['clone', '-q', origin, root], { env: { ...sb.env, ...GIT_ENV } });
  sb.fakeBin('claude', `exec node '${FAKE_HEADLESS}' claude "$@"`);
  for (const skill of SKILLS) {
    mkdirSync(join(sb.home, '.claude', 'skills', skill), { recursive: true });
    writeFileSync(join(sb.home, '.claude', 'skills', skill, 'SKILL.md'), `---\nname: ${skill}\ndescription: ${skill}\n---\n`);
  }
  const made = (await api('/api/runners', { method: 'POST', json: { name: `pool-${key}` } })).body;
  const paired = await runCli(sb, ['pair', '--server', server.url, '--code', made.code, '--no-detect', '--tags', tags.join(',')]);
  assert.is(paired.status, 0, paired.stderr);
  sb.writeConfig({ ...sb.readConfig(), profiles: [{ id: 'cc', runtime: 'claude', env: { FAKE_AGENT_DIR: join(sb.dir, 'agent'), FAKE_SLEEP_MS: '1000' }, args: [] }], skills: { maxConcurrentRuns: 2 } });
  const socket = `svc-test-pool-${key}-${process.pid}`;
  const daemon = startDaemon(sb, { ...GIT_ENV, SVC_TMUX_SOCKET: socket, SVC_RUNS_POLL_MS: '100' });
  return { name: key, sb, root, id: made.runner.id, socket, daemon };
}

/** `n` pool triggers (one live run per trigger, so one trigger per run), each called once (202). */
async function callTriggers(n: number, over: Record<string, unknown> = {}) {
  const made = [];
  for (let i = 0; i < n; i++) {
    made.push(await createTrigger(server, projectId, skillTrigger({ name: `pool ${Date.now()}-${i}`, skill: 'slow', args: [], allowedPaths: [], target: 'pool', ...over })));
  }
  await Promise.all(made.map(async (t, i) => {
    const r = await post(t.url, t.secret, { n: i }, { delivery: `call-${t.id}` });
    assert.is(r.status, 202, r.text);
  }));
  return made;
}

/** Each call's one delivery: `fired`, naming the run it queued. */
async function firedRuns(made: { id: string }[]): Promise<{ triggerId: string; runId: string }[]> {
  const out = [];
  for (const t of made) {
    const row = await until(async () => (await deliveries(server, projectId, t.id)).find((x) => x.status !== 'accepted'), 20_000, `trigger ${t.id}'s delivery decided`);
    assert.is(row.status, 'fired', JSON.stringify(row));
    assert.ok(row.runId, 'the delivery names its run');
    out.push({ triggerId: t.id, runId: row.runId as string });
  }
  return out;
}

const callPool = async (n: number, over: Record<string, unknown> = {}) => firedRuns(await callTriggers(n, over));

/** Samples the project's runs every 100 ms until stopped: the most in flight at once and the most queued. */
function sampler() {
  let most = 0;
  let queuedSeen = 0;
  let badQueue: unknown = null;
  let on = true;
  const loop = (async () => {
    while (on) {
      const list = await runs().catch(() => null);
      if (!list) return; // the server went away: the test that started this fails on its own
      most = Math.max(most, list.filter((r) => r.state === 'starting' || r.state === 'running').length);
      const queued = list.filter((r) => r.state === 'queued');
      queuedSeen = Math.max(queuedSeen, queued.length);
      for (const q of queued) if (!(q.queue?.position >= 1 && q.queue?.reason)) badQueue = q;
      await new Promise((r) => setTimeout(r, 100));
    }
  })();
  return { stop: async () => ((on = false), await loop, { most, queuedSeen, badQueue }) };
}

test.before(async () => {
  server = await startServer({ admin: true, env: { APP_ENCRYPTION_KEY: KEY, POOL_LOSS_GRACE_SECONDS: '2' } });
  // The repository every runner clones: one origin, three clones.
  const seed = sandbox();
  origin = join(seed.dir, 'origin.git');
  const work = join(seed.dir, 'seed');
  mkdirSync(work, { recursive: true });
  const git = (...args: string[]) => execFileSync('git', args, { cwd: work, env: { ...seed.env, ...GIT_ENV } });
  git('init', '-q', '-b', 'main');
  writeFileSync(join(work, 'README.md'), '# repo\n');
  git('add', '-A');
  git('commit', '-q', '-m', 'init');
  execFileSync('git', ['clone', '-q', '--bare', work, origin]);
  runners.a = await startRunner('a', ['linux']);
  runners.b = await startRunner('b', ['linux', 'bonly']);
  runners.c = await startRunner('c', ['linux']);
  const made = await api('/api/projects', { method: 'POST', json: { name: 'pool-e2e', repo: 'acme/repo', runnerId: runners.a.id, rootPath: runners.a.root } });
  assert.is(made.status, 201, JSON.stringify(made.body));
  projectId = made.body.id;
  for (const r of [runners.b, runners.c]) {
    // Online and announcing the pool capability before its root is checked there.
    await waitUntil(async () => (await api(`/api/runners/${r.id}`)).body.capabilities?.includes('skills.pool'), 20_000, `runner ${r.name} online`);
    const put = await api(`/api/projects/${projectId}/runners/${r.id}`, { method: 'PUT', json: { rootPath: r.root } });
    assert.is(put.status, 201, JSON.stringify(put.body));
    assert.is(put.body.rootState ?? put.body.runner?.rootState ?? 'ok', 'ok', JSON.stringify(put.body));
  }
  await until(async () => {
    const list = (await api(`/api/projects/${projectId}/runners`)).body.runners as Record<string, any>[];
    return list.length === 3 && list.every((r) => r.status === 'online' && r.maxConcurrentRuns === 2 && r.takesPoolRuns);
  }, 20_000, 'three pool runners online with 2 places each', async () => JSON.stringify((await api(`/api/projects/${projectId}/runners`)).body));
});

test.after(async () => {
  await killDaemons();
  for (const r of Object.values(runners)) {
    spawnSync('tmux', ['-L', r.socket, 'kill-server']);
    rmSync(join(process.env.TMUX_TMPDIR || '/tmp', `tmux-${process.getuid!()}`, r.socket), { force: true });
    r.sb.cleanup();
  }
  await server?.cleanup();
});

test('30 pool runs over three runners with 2 places each: at most 6 at once, the rest queued, all finish, none twice', async () => {
  const seen = sampler();
  let calls: { triggerId: string; runId: string }[];
  let stats: Awaited<ReturnType<typeof seen.stop>>;
  try {
    calls = await callPool(30);
    await until(async () => {
      const list = (await runs()).filter((r) => calls.some((c) => c.runId === r.id));
      return list.length === 30 && list.every((r) => r.state === 'succeeded');
    }, 120_000, 'all 30 succeeded', async () => JSON.stringify((await runs()).map((r) => [r.id, r.state, r.runnerId, r.reason])));
  } finally {
    stats = await seen.stop();
  }
  const { most, queuedSeen, badQueue } = stats;
  assert.ok(most <= 6, `at most 6 at once, saw ${most}`);
  assert.ok(most >= 4, `the pool's places were used together, saw at most ${most} at once`);
  assert.ok(queuedSeen > 0, 'some runs waited in the queue');
  assert.is(badQueue, null, 'every queued run says its place and why');
  const held = [runners.a, runners.b, runners.c].flatMap((r) => runDirs(r).filter((id) => calls.some((c) => c.runId === id)));
  assert.is(held.length, 30, 'each run was given to exactly one runner, once');
  assert.is(new Set(held).size, 30);
  const byRunner = new Map<string, number>();
  for (const r of (await runs()).filter((x) => calls.some((c) => c.runId === x.id))) byRunner.set(r.runnerId, (byRunner.get(r.runnerId) ?? 0) + 1);
  assert.is(byRunner.size, 3, `every pool runner took work: ${JSON.stringify([...byRunner])}`);
});

test('kill -9 of a runner with runs in flight: they end runner_lost, retries run on the others, every call accounted for once', async () => {
  const made = await callTriggers(6, { retryOnRunnerLoss: true });
  const victim = runners.c;
  // Every earlier run has ended: a run in flight now is one of these.
  await until(async () => (await runs()).some((r) => r.runnerId === victim.id && ['starting', 'running'].includes(r.state)), 30_000, 'a run in flight on runner c');
  victim.daemon.proc.kill('SIGKILL');
  await victim.daemon.exited;
  spawnSync('tmux', ['-L', victim.socket, 'kill-server']); // its agents die with the machine
  const calls = await firedRuns(made);
  const lost = await until(async () => {
    const list = await runs();
    const mine = list.filter((r) => calls.some((c) => c.runId === r.id));
    const finals = mine.filter((r) => ['succeeded', 'failed', 'cancelled', 'timed_out'].includes(r.state));
    if (finals.length < 6) return undefined;
    const lostOnes = mine.filter((r) => r.reason === 'runner_lost');
    const retries = list.filter((r) => lostOnes.some((l) => l.id === r.retryOf));
    return retries.length === lostOnes.length && retries.every((r) => r.state === 'succeeded') ? { mine, lostOnes, retries } : undefined;
  }, 90_000, 'every run final, each lost one retried to success', async () => JSON.stringify((await runs()).slice(0, 20).map((r) => [r.id, r.state, r.runnerId, r.reason, r.retryOf])));
  assert.ok(lost.lostOnes.length >= 1, 'at least one run was lost with runner c');
  for (const l of lost.lostOnes) assert.is(l.state, 'failed');
  for (const r of lost.retries) assert.ok([runners.a.id, runners.b.id].includes(r.runnerId), 'a retry ran on another runner');
  for (const r of lost.mine.filter((x) => x.reason !== 'runner_lost')) assert.is(r.state, 'succeeded', JSON.stringify(r));
  // Every trigger call: one delivery, fired, naming exactly one of these runs.
  for (const c of calls) {
    const ds = await deliveries(server, projectId, c.triggerId);
    assert.is(ds.length, 1);
    assert.equal([ds[0].status, ds[0].runId], ['fired', c.runId]);
  }
  const dirs = [runners.a, runners.b].flatMap((r) => runDirs(r));
  for (const r of lost.retries) assert.is(dirs.filter((id) => id === r.id).length, 1, 'each retry given once');
});

test('a tag no runner has: the run waits, says why, and fails no_runner_available after the timeout; the admins are told', async () => {
  const [call] = await callPool(1, { targetTags: ['gpu'], queueTimeoutMinutes: 0.05 });
  // Until the dispatcher's first pass the reason is 'waiting for the dispatcher'; then it names the tag.
  const waiting = await until(async () => (await runs()).find((r) => r.id === call.runId && r.state === 'queued' && /gpu/.test(r.queue?.reason ?? '')), 10_000, 'the run queued with a reason naming the tag',
    async () => JSON.stringify((await runs()).find((r) => r.id === call.runId)));
  assert.match(waiting.queue.reason, /no runner online with tag gpu/);
  const failed = await until(async () => (await runs()).find((r) => r.id === call.runId && r.state === 'failed'), 30_000, 'the run failed after the queue timeout');
  assert.is(failed.reason, 'no_runner_available');
  assert.is(failed.runnerId, null);
  const notes = await until(async () => {
    const body = (await api('/api/notifications?limit=100')).body;
    return (body.notifications as Record<string, any>[]).filter((n) => n.kind === 'run.queue_timeout' && JSON.stringify(n).includes(call.runId)).length === 1 ? body : undefined;
  }, 10_000, 'one run.queue_timeout notification');
  assert.ok(notes);
});

test('a runner removed from the pool while it runs: its run is still recorded, and no new run goes there', async () => {
  const b = runners.b;
  const [call] = await callPool(1, { targetTags: ['bonly'] });
  await until(async () => (await runs()).find((r) => r.id === call.runId && r.runnerId === b.id && ['starting', 'running'].includes(r.state)), 30_000, 'the run on runner b');
  const del = await api(`/api/projects/${projectId}/runners/${b.id}`, { method: 'DELETE' });
  assert.is(del.status, 204);
  const done = await until(async () => (await runs()).find((r) => r.id === call.runId && r.state === 'succeeded'), 30_000, 'the run finished and recorded');
  assert.is(done.runnerId, b.id);
  const before = runDirs(b).length;
  const more = await callPool(3);
  await until(async () => (await runs()).filter((r) => more.some((m) => m.runId === r.id) && r.state === 'succeeded').length === 3, 60_000, 'three more runs finished');
  for (const r of (await runs()).filter((x) => more.some((m) => m.runId === x.id))) assert.is(r.runnerId, runners.a.id, 'only runner a is left in the pool');
  assert.is(runDirs(b).length, before, 'runner b was given nothing new');
});

test.run();

// Runner sockets spread over the replicas (functions/runners/rebalance.ts, docs/operations.md "Runner
// sockets spread"): 20 real runner bundles behind HAProxy (docs/examples/haproxy.cfg) on 3 replicas of
// scripts/cluster.sh. After a kill -9 the runners pile onto the two replicas left; once the third is
// started again the ones above their share are asked to reconnect (1012) and the balancer puts them on it,
// while every runner keeps sending events.
import { appendFileSync, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import postgres from 'postgres';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { gitWorkTree } from '../helpers/git.ts';
import { freshPostgres, onlyOn, tempDir } from '../helpers/db.ts';
import { waitUntil } from '../runner/_harness.ts';
import { balancerOf, cluster } from './_cluster.ts';

const RUNNERS = 20;

onlyOn('postgres', test, 1, () => {
  let pg: Awaited<ReturnType<typeof freshPostgres>>;
  let env: Record<string, string>;
  let db: postgres.Sql;
  test.before(async () => {
    pg = await freshPostgres();
    env = { DATABASE_URL: pg.url, CLUSTER_DIR: tempDir('rebalance-') };
    db = postgres(pg.url, { max: 2, onnotice: () => {} });
  });
  test.after(async () => {
    if (env) await cluster(['down'], env).catch(() => {});
    await db?.end();
    await pg?.drop();
  });

  /** Runners per server process holding sockets (instance ids are per process), largest first. */
  const spread = async () =>
    (await db`select count(*)::int as n from runners where connected_instance is not null and last_seen_at > now() - interval '60 seconds' group by connected_instance order by 1 desc`).map((r) => r.n);
  const poll = (check: () => Promise<boolean>) => async () => (await new Promise((r) => setTimeout(r, 250)), check());

  test(`${RUNNERS} runners, 3 replicas: after a kill -9 and a restart of one, each replica holds 5 to 9 within 30 s, and no event is lost in the moves`, async () => {
    const up = await cluster(['up', '--runners', String(RUNNERS)], env, 300_000);
    assert.is(up.code, 0, up.out);
    const balancer = balancerOf(up.out);
    const state = JSON.parse(readFileSync(join(env.CLUSTER_DIR, 'cluster.json'), 'utf8'));
    const api = (path: string, json?: unknown) =>
      fetch(balancer + path, { method: json ? 'POST' : 'GET', headers: { authorization: `Bearer ${state.admin.token}`, 'content-type': 'application/json' }, body: json ? JSON.stringify(json) : undefined });
    // A watched project on every runner: each one sends events the whole time.
    const roots: string[] = [];
    for (const [i, runner] of state.runners.entries()) {
      const root = join(runner.home, `p${i}`);
      mkdirSync(join(gitWorkTree(root), '.svc'), { recursive: true });
      const made = await api('/api/projects', { name: `p${i}`, repo: `acme/p${i}`, runnerId: runner.id, rootPath: root });
      assert.is(made.status, 201, await made.clone().text());
      const { id } = await made.json();
      const configPath = join(runner.home, '.config', 'svc', 'runner.json');
      await waitUntil(() => (JSON.parse(readFileSync(configPath, 'utf8')).projects ?? []).some((p: any) => p.id === id), 60_000, `runner ${i} to watch its project`);
      roots.push(root);
    }
    let written = 0;
    let writing = true;
    const writer = (async () => {
      for (; writing; written++) {
        const line = { v: 1, time: new Date().toISOString(), type: 'slot.checkpoint', slot: 'a', issue: 1, data: { checkpoint: 'plan_ready', summary: `e${written}` } };
        appendFileSync(join(roots[written % roots.length], '.svc', 'events.jsonl'), `${JSON.stringify(line)}\n`);
        await new Promise((r) => setTimeout(r, 100));
      }
    })();

    const k = await cluster(['kill', '1'], env);
    assert.is(k.code, 0, k.out);
    let now: number[] = [];
    await waitUntil(poll(async () => (now = await spread()).length === 2 && now[0] + now[1] === RUNNERS), 60_000, () => `all runners on the 2 replicas left: ${now.join(', ')}`);
    const s = await cluster(['start', '1'], env);
    assert.is(s.code, 0, s.out);
    const started = Date.now();
    await waitUntil(
      poll(async () => (now = await spread()).length === 3 && now.reduce((a, b) => a + b, 0) === RUNNERS && now.every((n) => n >= 5 && n <= 9)),
      30_000,
      () => `each of 3 replicas holding 5 to 9 of ${RUNNERS} runners; now ${now.join(', ')}`,
    );
    const took = Date.now() - started;

    writing = false;
    await writer;
    const stored = async () => (await db`select payload->'data'->>'summary' as s from runner_events where kind = 'slot.checkpoint'`).map((r) => Number(String(r.s).slice(1)));
    let have = 0;
    await waitUntil(poll(async () => (have = new Set(await stored()).size) >= written), 120_000, () => `all ${written} events stored; have ${have}`);
    assert.equal((await stored()).sort((a, b) => a - b), Array.from({ length: written }, (_, i) => i), '0 lost, 0 stored twice');
    // The moved runners were asked with 1012 and came back from the first backoff step (1 s ± 20 %).
    const moves = state.runners.flatMap((r: { home: string }) => [...readFileSync(join(r.home, 'runner.log'), 'utf8').matchAll(/connection down \(1012: moving to another server process\); reconnecting in ([\d.]+) s/g)].map((m) => Number(m[1])));
    assert.ok(moves.length >= 5, `runners moved: ${moves.length}`);
    for (const delay of moves) assert.ok(delay <= 1.2, `reconnected after ${delay} s`);
    console.log(`rebalanced to ${now.join(', ')} in ${took} ms after the restart; ${moves.length} runners moved; ${written} events, each stored once`);
  });
});

test.run();

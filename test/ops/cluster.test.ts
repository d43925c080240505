// The scale-out topology of scripts/cluster.sh (docs/operations.md "Several replicas"): 3 real server
// processes on one PostgreSQL database behind a real HAProxy, with real runner bundles paired and
// connected through it. Every request goes through the balancer, so it lands on any replica.
// needs: haproxy nginx tmux
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { appendFileSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer as createHttpServer } from 'node:http';
import { request } from 'node:https';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import postgres from 'postgres';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import WebSocket from 'ws';
import { gitWorkTree } from '../helpers/git.ts';
import { freshPostgres, onlyOn, tempDir } from '../helpers/db.ts';
import { openLive } from '../helpers/live.ts';
import { signTrigger } from '../../docs/examples/sign-trigger.ts';
import { waitUntil } from '../runner/_harness.ts';
import { cluster, hammer } from './_cluster.ts';

onlyOn('postgres', test, 9, () => {
  let pg: Awaited<ReturnType<typeof freshPostgres>>;
  let env: Record<string, string>;
  let balancer = '';
  let state: any;
  let db: postgres.Sql;
  const api = (path: string, init: RequestInit & { json?: unknown } = {}) =>
    fetch(balancer + path, {
      ...init,
      headers: { authorization: `Bearer ${state.admin.token}`, 'content-type': 'application/json' },
      body: init.json === undefined ? undefined : JSON.stringify(init.json),
    });
  /** A project `name` rooted in the runner's home, once the runner watches it. */
  const watchedProject = async (runner: { id: string; home: string }, name: string) => {
    const root = join(runner.home, name);
    mkdirSync(join(gitWorkTree(root), '.svc'), { recursive: true });
    const project = await (await api('/api/projects', { method: 'POST', json: { name, repo: `acme/${name}`, runnerId: runner.id, rootPath: root } })).json();
    const configPath = join(runner.home, '.config', 'svc', 'runner.json');
    await waitUntil(() => (JSON.parse(readFileSync(configPath, 'utf8')).projects ?? []).some((p: any) => p.id === project.id), 30_000, 'the runner to watch the project');
    return { root, project };
  };
  const ping = async (runnerId: string) => (await api(`/api/runners/${runnerId}/commands`, { method: 'POST', json: { name: 'runner.ping', args: {} } })).status;

  // The replicas' settings, given to `up` as an env file: values with spaces (a cron) and quoted ones.
  const envFile = join(tempDir('cluster-env-'), 'replicas.env');
  writeFileSync(envFile, '# every replica\nAUDIT_VERIFY_CRON=15 2 * * *\n\nACTIVITY_RETENTION_CRON="40 4 * * 1"\n');
  /** The cron of the system job `name` as replica `i` (1 to 3) answers it on its own port. */
  const cronOn = async (i: number, name: string) => {
    const r = await fetch(`http://127.0.0.1:${state.replicas[i - 1].port}/api/schedules`, { headers: { authorization: `Bearer ${state.admin.token}` } });
    if (r.status !== 200) return `${r.status} ${await r.text()}`;
    return (await r.json()).jobs.find((j: any) => j.name === name)?.cron;
  };

  test.before(async () => {
    pg = await freshPostgres();
    env = { DATABASE_URL: pg.url, CLUSTER_DIR: tempDir('cluster-') };
    db = postgres(pg.url, { max: 2, onnotice: () => {} });
  });
  test.after(async () => {
    if (env) await cluster(['down'], env).catch(() => {});
    await db?.end();
    await pg?.drop();
  });

  test('up: 3 replicas behind HAProxy, 2 runners paired and online through it; the last line names the balancer', async () => {
    const r = await cluster(['up', '--runners', '2', '--env-file', envFile], env);
    assert.is(r.code, 0, r.out);
    const last = r.out.trim().split('\n').at(-1)!;
    assert.match(last, /^BALANCER=http:\/\/127\.0\.0\.1:\d+$/);
    balancer = last.slice('BALANCER='.length);
    state = JSON.parse(readFileSync(join(env.CLUSTER_DIR, 'cluster.json'), 'utf8'));
    assert.is(state.replicas.length, 3);
    const status = await cluster(['status'], env);
    assert.is(status.out.match(/ up$/gm)?.length, 6, status.out); // balancer, 3 replicas, 2 runners
    const { runners } = await (await api('/api/runners')).json();
    assert.equal(runners.map((x: any) => x.status), ['online', 'online']);
    for (const i of [1, 2, 3]) {
      assert.is(await cronOn(i, 'audit.verify'), '15 2 * * *', `replica ${i}: the env file's unquoted value with spaces`);
      assert.is(await cronOn(i, 'retention.activity'), '40 4 * * 1', `replica ${i}: the env file's quoted value`);
    }
  });

  test("start from another shell: the replica joins the topology's database with the settings `up` was given, not the shell's", async () => {
    const other = await freshPostgres();
    try {
      assert.is((await cluster(['kill', '3'], env)).code, 0);
      // Another shell: another DATABASE_URL, no env file.
      const s = await cluster(['start', '3'], { ...env, DATABASE_URL: other.url });
      assert.is(s.code, 0, s.out);
      const here = await fetch(`http://127.0.0.1:${state.replicas[2].port}/api/runners`, { headers: { authorization: `Bearer ${state.admin.token}` } });
      assert.is(here.status, 200, 'the admin token of the topology\'s database works on the restarted replica');
      assert.is((await here.json()).runners.length, 2);
      assert.is(await cronOn(3, 'audit.verify'), '15 2 * * *');
      const o = postgres(other.url, { max: 1, onnotice: () => {} });
      const [{ n }] = await o`select count(*)::int as n from pg_tables where schemaname = 'public'`;
      await o.end();
      assert.is(n, 0, 'nothing was made in the other database');
      assert.match(s.out, /DATABASE_URL is not used/, 'and the shell is told');
    } finally {
      await other.drop();
    }
  });

  test('the old CLUSTER_SERVER_ENV is refused with what to use instead, before anything starts', async () => {
    const dir = tempDir('cluster-old-');
    const r = await cluster(['up', '--runners', '0'], { ...env, CLUSTER_DIR: dir, CLUSTER_SERVER_ENV: 'AUDIT_VERIFY_CRON=0 3 * * *' });
    assert.is(r.code, 1);
    assert.match(r.out, /CLUSTER_SERVER_ENV is no longer read: .*--env-file <file>/);
    assert.not.ok(existsSync(join(dir, 'cluster.json')), 'no topology was made');
  });

  test('commands and terminals work whichever replica the request and the runner socket land on', async () => {
    for (const runner of state.runners) for (let i = 0; i < 6; i++) assert.is(await ping(runner.id), 200);
    // A project on runner 1 with a tmux session on that runner's tmux server.
    const runner = state.runners[0];
    const root = join(runner.home, 'widgets');
    gitWorkTree(root);
    const project = await (await api('/api/projects', { method: 'POST', json: { name: 'widgets', repo: 'acme/widgets', runnerId: runner.id, rootPath: root } })).json();
    assert.ok(project.id, JSON.stringify(project));
    const session = `svc-${project.id}-orch`;
    const tmuxSocket = createHash('sha256').update(runner.home).digest('hex').slice(0, 12); // as scripts/cluster.mjs names it
    const tmux = (...args: string[]) => spawnOut('tmux', ['-L', `svc-cluster-${tmuxSocket}`, ...args]);
    tmux('new-session', '-d', '-s', session, '-x', '80', '-y', '24', 'sh');
    // Three attaches in a row: round robin puts the browser's socket on different replicas.
    for (let i = 0; i < 3; i++) await attachAndType(balancer, state.admin.token, project.id, session, i);
    tmux('kill-server');
  });

  test('/api/live through the balancer: pages connected to each replica hear a change that arrived at any of them', async () => {
    const runner = state.runners[0];
    const { root, project } = await watchedProject(runner, 'livewire');
    // Three sockets in a row: round robin puts them on the three replicas.
    const pages = [0, 1, 2].map(() => openLive(balancer, { token: state.admin.token }));
    try {
      await Promise.all(pages.map((p) => new Promise((r, j) => (p.ws.once('open', r), p.ws.once('close', j)))));
      const line = { v: 1, time: new Date().toISOString(), type: 'slot.checkpoint', slot: 'a', issue: 3, data: { checkpoint: 'plan_ready', summary: 'live' } };
      appendFileSync(join(root, '.svc', 'events.jsonl'), `${JSON.stringify(line)}\n`);
      for (const p of pages) await p.next((n) => n.type === 'fleet' && n.projectId === project.id, 30_000);
    } finally {
      for (const p of pages) p.close();
    }
  });

  test('kill -9 of each replica in turn, then of the balancer, while events, trigger calls and webhook deliveries flow: every event stored once and delivered, every trigger call recorded once and settled, runners back', async () => {
    const runner = state.runners[1];
    const { root, project } = await watchedProject(runner, 'gadgets');
    // A webhook receiver on loopback, subscribed to the events the runner sends.
    const received: any[] = [];
    const rx = createHttpServer((req, res) => {
      let body = '';
      req.on('data', (c) => (body += c));
      req.on('end', () => {
        try {
          received.push(JSON.parse(body));
        } catch {}
        res.end('ok');
      });
    });
    await new Promise<void>((r) => rx.listen(0, '127.0.0.1', r));
    const rxUrl = `http://127.0.0.1:${(rx.address() as AddressInfo).port}`;
    try {
      assert.is((await api('/api/webhooks/allowlist', { method: 'PUT', json: { allowlist: '127.0.0.1/32' } })).status, 200);
      const hook = await api('/api/webhooks', { method: 'POST', json: { url: `${rxUrl}/svc`, events: ['slot.checkpoint'] } });
      assert.is(hook.status, 201, await hook.clone().text());
      // A trigger called as a sender would: each call keeps its delivery id across retries; a lost answer
      // (the replica died, the balancer answered 502/503) is retried, and a 409 then means the first try got in.
      const made = await api(`/api/projects/${project.id}/triggers`, { method: 'POST', json: { name: 'round on push', action: 'next_round' } });
      assert.is(made.status, 201, await made.clone().text());
      const trig = await made.json();
      const calls = 20;
      const answers = { accepted: 0, replayed: 0, retries: 0, other: [] as string[] };
      const caller = (async () => {
        for (let i = 0; i < calls; i++) {
          for (let attempt = 0; ; attempt++) {
            const body = JSON.stringify({ ref: `r${i}` });
            const status = await fetch(trig.trigger.url, { method: 'POST', headers: { 'content-type': 'application/json', ...signTrigger(trig.secret, body, { delivery: `fault-${i}` }) }, body, signal: AbortSignal.timeout(15_000) })
              .then(async (r) => (await r.arrayBuffer(), r.status))
              .catch(() => 0);
            if (status === 202) answers.accepted++;
            else if (status === 409 && attempt > 0) answers.replayed++;
            else if (status === 0 || status >= 500) {
              answers.retries++;
              if (attempt < 60) {
                await new Promise((r) => setTimeout(r, 500));
                continue;
              }
              answers.other.push(`fault-${i}: still ${status} after ${attempt} retries`);
            } else answers.other.push(`fault-${i}: ${status}`);
            break;
          }
          await new Promise((r) => setTimeout(r, 600));
        }
      })();
      const total = 60;
      let written = 0;
      const writer = (async () => {
        for (; written < total; written++) {
          const line = { v: 1, time: new Date().toISOString(), type: 'slot.checkpoint', slot: 'a', issue: 7, data: { checkpoint: 'plan_ready', summary: `n${written}` } };
          appendFileSync(join(root, '.svc', 'events.jsonl'), `${JSON.stringify(line)}\n`);
          await new Promise((r) => setTimeout(r, 250));
        }
      })();
      for (const i of [1, 2, 3]) {
        const k = await cluster(['kill', String(i)], env);
        assert.is(k.code, 0, k.out);
        const s = await cluster(['start', String(i)], env);
        assert.is(s.code, 0, s.out);
      }
      const b = await cluster(['restart-balancer'], env);
      assert.is(b.code, 0, b.out);
      await writer;
      await caller;
      assert.equal(answers.other, [], 'every trigger call answered 202 (or 409 on a retry of an accepted one)');
      assert.is(answers.accepted + answers.replayed, calls);
      const recorded = await db`select delivery_id, status from inbound_deliveries where trigger_id = ${trig.trigger.id}`;
      assert.equal(recorded.map((r) => r.delivery_id).sort(), Array.from({ length: calls }, (_, i) => `fault-${i}`).sort(), 'each call recorded once: 0 lost, 0 twice');
      // None left unsettled: one whose replica died before or while firing is taken over after its lease.
      let open: string[] = [];
      await waitUntil(async () => (open = (await db`select delivery_id || ' ' || status as d from inbound_deliveries where trigger_id = ${trig.trigger.id} and status in ('accepted', 'firing')`).map((r) => r.d)).length === 0, 150_000, () => `every trigger delivery settled; open: ${open.join(', ')}`);
      const stored = async () => (await db`select payload->'data'->>'summary' as s from runner_events where runner_id = ${runner.id} and kind = 'slot.checkpoint'`).map((r) => Number(String(r.s).slice(1)));
      let have = 0;
      await waitUntil(async () => (have = (await stored()).length) >= total, 120_000, () => `all ${total} events stored; have ${have}`);
      const ns = (await stored()).sort((a, b) => a - b);
      assert.equal(ns, Array.from({ length: total }, (_, i) => i), '0 lost, 0 stored twice');
      // Every event delivered at least once (a delivery whose replica died mid-attempt is retried after its lease).
      const delivered = () => new Set(received.filter((e) => e.type === 'slot.checkpoint').map((e) => e.data?.summary));
      await waitUntil(() => delivered().size >= total, 150_000, () => `all ${total} events delivered; have ${delivered().size}`);
      assert.is(delivered().size, total);
      await waitUntil(async () => {
        const { runners } = await (await api('/api/runners')).json();
        return runners.every((x: any) => x.status === 'online');
      }, 90_000, 'both runners online again');
      for (const r of state.runners) assert.is(await ping(r.id), 200);
      console.log(`kill -9 of 3 replicas and the balancer: ${total} events, ${ns.length} stored, ${received.length} deliveries received for ${delivered().size} events; ${calls} trigger calls, ${answers.accepted} answered 202, ${answers.replayed} 409 on a retry, ${answers.retries} retries, ${recorded.length} recorded`);
    } finally {
      rx.close();
    }
  });

  test('two of three replicas killed together: HAProxy answers every request from the third, none with 503 "No server is available"', async () => {
    const log = join(env.CLUSTER_DIR, 'haproxy.log');
    const downs = () => (readFileSync(log, 'utf8').match(/Server replicas\/api[12] is DOWN/g) ?? []).length;
    const before = downs();
    const load = hammer(`${balancer}/health`);
    await waitUntil(() => load.seen.total >= 200, 60_000, 'requests before the kill');
    const k = await cluster(['kill', '1', '2'], env);
    assert.is(k.code, 0, k.out);
    // Until HAProxy has taken both out (its log says so), and a few hundred requests after that.
    await waitUntil(() => downs() >= before + 2, 30_000, 'HAProxy to mark replicas 1 and 2 down');
    const after = load.seen.total;
    await waitUntil(() => load.seen.total >= after + 300, 60_000, 'requests after the replicas were marked down');
    const seen = await load.stop();
    const s = await cluster(['start', '1', '2'], env);
    assert.is(s.code, 0, s.out);
    console.log(`kill -9 of replicas 1 and 2 together: ${seen.total} requests through HAProxy, by status ${JSON.stringify(seen.byStatus)}`);
    assert.equal(seen.errors.filter((e) => e.startsWith('503')), [], 'no 503 while replica 3 was up');
  });

  test('nginx (docs/examples/nginx.conf) as the TLS balancer: runners pair and connect over wss, the API and terminals work through it, and a double kill answers no 5xx', async () => {
    const envN = { DATABASE_URL: pg.url.replace(/\/([^/]+)$/, '/$1_nginx'), CLUSTER_DIR: tempDir('cluster-nginx-') };
    try {
      const r = await cluster(['up', '--runners', '1', '--balancer', 'nginx'], envN);
      assert.is(r.code, 0, r.out);
      const url = r.out.trim().split('\n').at(-1)!.slice('BALANCER='.length);
      assert.match(url, /^https:\/\/127\.0\.0\.1:\d+$/);
      const st = JSON.parse(readFileSync(join(envN.CLUSTER_DIR, 'cluster.json'), 'utf8'));
      const ca = readFileSync(join(envN.CLUSTER_DIR, 'tls.crt'), 'utf8');
      assert.is((await httpsJson(`${url}/health`, ca)).status, 200);
      const runners = await httpsJson(`${url}/api/runners`, ca, { token: st.admin.token });
      assert.equal(runners.body.runners.map((x: any) => x.status), ['online'], 'the runner paired and connected over wss through nginx');
      const runner = st.runners[0];
      const root = join(runner.home, 'tools');
      gitWorkTree(root);
      const project = await httpsJson(`${url}/api/projects`, ca, { method: 'POST', token: st.admin.token, json: { name: 'tools', repo: 'acme/tools', runnerId: runner.id, rootPath: root } });
      assert.is(project.status, 201, JSON.stringify(project.body));
      const session = `svc-${project.body.id}-orch`;
      const tmux = (...args: string[]) => spawnOut('tmux', ['-L', `svc-cluster-${createHash('sha256').update(runner.home).digest('hex').slice(0, 12)}`, ...args]);
      tmux('new-session', '-d', '-s', session, '-x', '80', '-y', '24', 'sh');
      for (let i = 0; i < 3; i++) await attachAndType(url, st.admin.token, project.body.id, session, i, ca);
      tmux('kill-server');
      // Two of three replicas killed together: a refused connection moves on to the next replica, so the
      // third answers everything (nginx skips a replica that failed for 10 s).
      const load = hammer(`${url}/health`, { ca });
      await waitUntil(() => load.seen.total >= 200, 60_000, 'requests before the kill');
      const k = await cluster(['kill', '1', '2'], envN);
      assert.is(k.code, 0, k.out);
      const after = load.seen.total;
      await waitUntil(() => load.seen.total >= after + 500, 60_000, 'requests after the kill');
      const seen = await load.stop();
      console.log(`nginx, kill -9 of replicas 1 and 2 together: ${seen.total} requests, by status ${JSON.stringify(seen.byStatus)}`);
      assert.equal(seen.errors, [], 'no 5xx while replica 3 was up');
    } finally {
      await cluster(['down'], envN).catch(() => {});
      const a = postgres(pg.url, { max: 1, onnotice: () => {} });
      await a.unsafe(`drop database if exists ${new URL(envN.DATABASE_URL).pathname.slice(1)} with (force)`).catch(() => {});
      await a.end();
    }
  });

  test('down stops every process it started', async () => {
    const d = await cluster(['down'], env);
    assert.is(d.code, 0, d.out);
    const status = await cluster(['status'], env);
    assert.not.match(status.out, / up$/m);
    const reached = await fetch(`${balancer}/health`).then(() => true, () => false);
    assert.not.ok(reached, 'the balancer is gone');
  });
});

/** The browser side of /api/terminal through the balancer: the screen comes, a typed command's output comes back. */
async function attachAndType(balancer: string, token: string, projectId: string, session: string, i: number, ca?: string) {
  const ws = new WebSocket(`${balancer.replace(/^http/, 'ws')}/api/terminal?projectId=${projectId}&session=${session}`, { headers: { authorization: `Bearer ${token}` }, ...(ca ? { ca } : {}) });
  const messages: any[] = [];
  ws.on('message', (d) => messages.push(JSON.parse(d.toString())));
  ws.on('error', () => {});
  const closed = new Promise<number>((r) => ws.on('close', (code) => r(code)));
  const text = () => messages.filter((m) => m.type === 'output').map((m) => m.data).join('');
  await waitUntil(() => messages.some((m) => m.type === 'output') || messages.some((m) => m.type === 'error'), 30_000, () => `attach ${i}: ${JSON.stringify(messages)}`);
  assert.not.ok(messages.some((m) => m.type === 'error'), JSON.stringify(messages));
  ws.send(JSON.stringify({ type: 'input', data: `echo attach-${i}-$((6*7))\r` }));
  await waitUntil(() => text().includes(`attach-${i}-42`), 20_000, () => `attach ${i} output: ${JSON.stringify(text().slice(-300))}`);
  ws.close();
  await closed;
}

/** An HTTPS request trusting `ca` (the topology's own certificate); the answer's status and JSON body. */
function httpsJson(url: string, ca: string, init: { method?: string; token?: string; json?: unknown } = {}): Promise<{ status: number; body: any }> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method: init.method ?? 'GET', ca, headers: { ...(init.token ? { authorization: `Bearer ${init.token}` } : {}), 'content-type': 'application/json' } }, (res) => {
      let text = '';
      res.on('data', (c) => (text += c));
      res.on('end', () => {
        let body: unknown = text;
        try {
          body = JSON.parse(text);
        } catch {}
        resolve({ status: res.statusCode ?? 0, body });
      });
    });
    req.on('error', reject);
    req.end(init.json === undefined ? undefined : JSON.stringify(init.json));
  });
}

function spawnOut(cmd: string, args: string[]): string {
  const r = spawnSync(cmd, args, { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')}: ${r.stderr}`);
  return r.stdout.trim();
}

test.run();

// A rolling upgrade (docs/operations.md "Upgrade" and "Cutting a release"): the previous release (the
// last line of RELEASES, built in a git worktree) runs as 3 replicas behind HAProxy with a runner of its
// own version; data is written through the API; then each replica is replaced by the current build, one
// by one, while requests flow through the balancer. No request may fail; the old runner keeps working
// with the new server, and the server offers the new runner bundle.
// needs: haproxy git
import { spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { ROOT, TMP, freshPostgres, onlyOn } from '../helpers/db.ts';
import { waitUntil } from '../runner/_harness.ts';

const SCRIPT = join(ROOT, 'scripts', 'cluster.sh');

function sh(cmd: string, args: string[], opts: { env?: Record<string, string>; cwd?: string; timeoutMs?: number } = {}): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve, reject) => {
    const p = spawn(cmd, args, { cwd: opts.cwd ?? ROOT, env: { ...process.env, ...opts.env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    p.stdout.on('data', (c) => (out += c));
    p.stderr.on('data', (c) => (out += c));
    const t = setTimeout(() => (p.kill('SIGKILL'), reject(new Error(`${cmd} ${args.join(' ')} did not finish:\n${out}`))), opts.timeoutMs ?? 300_000);
    p.on('close', (code) => (clearTimeout(t), resolve({ code, out })));
  });
}

/** The previous release: the last `<version> <commit>` line of RELEASES. */
export function previousRelease(): { version: string; commit: string } {
  const lines = readFileSync(join(ROOT, 'RELEASES'), 'utf8').split('\n').filter((l) => l.trim() && !l.startsWith('#'));
  const [version, commit] = lines.at(-1)!.trim().split(/\s+/);
  return { version, commit };
}

onlyOn('postgres', test, 1, () => {
  const release = previousRelease();
  const worktree = join(TMP, `release-${release.commit.slice(0, 12)}`);
  let pg: Awaited<ReturnType<typeof freshPostgres>>;
  const env: Record<string, string> = {};
  test.after(async () => {
    await sh(SCRIPT, ['down'], { env }).catch(() => {});
    await pg?.drop();
    spawnSync('git', ['worktree', 'remove', '--force', worktree], { cwd: ROOT });
  });

  test(`rolling upgrade from ${release.version} (${release.commit.slice(0, 12)}) to this build: 0 failed requests, the old runner keeps working, data kept`, async () => {
    assert.match(release.commit, /^[0-9a-f]{40}$/, 'RELEASES names a full commit hash');
    // The previous release, built as its own checkout would build it.
    if (!existsSync(join(worktree, 'dist', 'server.mjs'))) {
      spawnSync('git', ['worktree', 'remove', '--force', worktree], { cwd: ROOT });
      spawnSync('git', ['worktree', 'prune'], { cwd: ROOT });
      const add = await sh('git', ['worktree', 'add', '--detach', worktree, release.commit]);
      assert.is(add.code, 0, add.out);
      const ci = await sh('npm', ['ci', '--no-audit', '--no-fund', '--prefer-offline'], { cwd: worktree, timeoutMs: 600_000 });
      assert.is(ci.code, 0, ci.out.slice(-3000));
      const build = await sh(process.execPath, ['esbuild.config.mjs'], { cwd: worktree });
      assert.is(build.code, 0, build.out);
    }
    const oldDist = join(worktree, 'dist');
    pg = await freshPostgres();
    Object.assign(env, { DATABASE_URL: pg.url, CLUSTER_DIR: join(TMP, `upgrade-${process.pid}`) });
    const up = await sh(SCRIPT, ['up', '--runners', '1', '--dist', oldDist], { env });
    assert.is(up.code, 0, up.out);
    const balancer = up.out.trim().split('\n').at(-1)!.slice('BALANCER='.length);
    const state = JSON.parse(readFileSync(join(env.CLUSTER_DIR, 'cluster.json'), 'utf8'));
    const api = (path: string, init: RequestInit & { json?: unknown } = {}) =>
      fetch(balancer + path, { ...init, headers: { authorization: `Bearer ${state.admin.token}`, 'content-type': 'application/json' }, body: init.json === undefined ? undefined : JSON.stringify(init.json) });
    const runner = state.runners[0];

    // Data written by the old release.
    const made = await api('/api/projects', { method: 'POST', json: { name: 'legacy', repo: 'acme/legacy', runnerId: runner.id, rootPath: join(runner.home, 'legacy') } });
    assert.is(made.status, 201, await made.clone().text());
    const project = await made.json();
    const hook = await api('/api/webhooks', { method: 'POST', json: { url: 'https://hooks.example.test/svc', events: ['run.finished'] } });
    const webhookStatus = hook.status;

    // Requests flow through the balancer the whole time: reads, and commands that cross replicas to the
    // runner. Each failure is kept with the build that answered it (x-svc-version; the previous release
    // sends none).
    const flow = () => {
      // `stopping`: the build of the replica being replaced right now. A request that got no answer at all
      // (the balancer closed the client's connection: the replica closed the keep-alive connection it was
      // sent on) is put down to that replica.
      const state = { stop: false, sent: 0, stopping: null as string | null, failures: [] as { by: string; what: string }[] };
      const done = (async () => {
        while (!state.stop) {
          // Which replica was being stopped is read when each request ends, not when the slowest of the
          // three does: a runner command can wait out its timeout while the stop and the start finish.
          const during = <T,>(p: Promise<T>) =>
            p.then(
              (value) => ({ status: 'fulfilled' as const, value }),
              (reason) => ({ status: 'rejected' as const, reason, stopping: state.stopping }),
            );
          const calls = [
            during(api('/api/runners')),
            during(api(`/api/projects/${project.id}`)),
            during(api(`/api/runners/${runner.id}/commands`, { method: 'POST', json: { name: 'runner.ping', args: {} } })),
          ];
          for (const r of await Promise.all(calls)) {
            state.sent++;
            if (r.status === 'rejected') state.failures.push({ by: r.stopping === 'previous' ? 'previous' : 'none', what: `${r.reason}${r.reason?.cause ? ` (${r.reason.cause.code ?? r.reason.cause.message ?? r.reason.cause})` : ''}` });
            else if (r.value.status !== 200) state.failures.push({ by: r.value.headers.get('x-svc-version') ?? 'previous', what: `${r.value.status} ${new URL(r.value.url).pathname} ${(await r.value.text()).slice(0, 160)}` });
          }
        }
      })();
      return { state, end: async () => ((state.stop = true), await done, state) };
    };
    const replaceAll = async (state: { sent: number; stopping: string | null }, dist: string, replacing: 'previous' | 'current') => {
      for (const i of [1, 2, 3]) {
        const before = state.sent;
        state.stopping = replacing;
        const s1 = await sh(SCRIPT, ['stop', String(i)], { env });
        assert.is(s1.code, 0, s1.out);
        const s2 = await sh(SCRIPT, ['start', String(i), '--dist', dist], { env });
        assert.is(s2.code, 0, s2.out);
        state.stopping = null;
        await waitUntil(() => state.sent >= before + 30, 60_000, `traffic after replica ${i} was replaced`);
      }
    };

    const upgrade = flow();
    await waitUntil(() => upgrade.state.sent >= 30, 60_000, 'traffic before the upgrade');
    await replaceAll(upgrade.state, 'current', 'previous');
    const u = await upgrade.end();
    const byThisBuild = u.failures.filter((f) => f.by !== 'previous');
    const byPrevious = u.failures.filter((f) => f.by === 'previous');
    console.log(`rolling upgrade ${release.version} → this build: ${u.sent} requests, ${u.failures.length} failed (${byPrevious.length} answered by the previous release: ${[...new Set(byPrevious.map((f) => f.what.slice(0, 60)))].join('; ') || 'none'})`);
    // This build's replicas fail nothing. The previous release fails only runner commands caught by a
    // replica going away: runner_offline while the runner reconnects (it had no reconnect grace) or
    // command_timeout when the command or its answer was lost with the socket (it sent nothing again).
    assert.equal(byThisBuild, [], 'requests failed on replicas of this build');
    // (A previous-release replica also closes its idle keep-alive connections at once on SIGTERM, so a
    // request the balancer sent on one gets no answer: `fetch failed`. This build drains first.)
    for (const f of byPrevious) assert.match(f.what, /^(503 \/api\/runners\/[^/]+\/commands .*runner_offline|504 \/api\/runners\/[^/]+\/commands .*command_timeout|TypeError: fetch failed\b)/);

    // The runner is upgraded too (its service restarted on the new bundle); then a rolling restart of this
    // build under the same traffic: nothing fails at all.
    const rr = await sh(SCRIPT, ['restart-runner', '1', '--dist', 'current'], { env });
    assert.is(rr.code, 0, rr.out);
    await waitUntil(async () => {
      const { runners } = await (await api('/api/runners')).json();
      return runners[0]?.status === 'online' && runners[0]?.version !== undefined;
    }, 60_000, 'the upgraded runner online');
    await waitUntil(async () => (await api(`/api/runners/${runner.id}/commands`, { method: 'POST', json: { name: 'runner.ping', args: {} } })).status === 200, 60_000, 'the upgraded runner answering');
    const restart = flow();
    await waitUntil(() => restart.state.sent >= 30, 60_000, 'traffic before the restart');
    await replaceAll(restart.state, 'current', 'current');
    const r = await restart.end();
    console.log(`rolling restart of this build: ${r.sent} requests, ${r.failures.length} failed`);
    assert.equal(r.failures, [], `requests failed during the rolling restart (${r.failures.length} of ${r.sent})`);

    // Every replica runs this build; the old runner still works with it; the new runner bundle is offered.
    const status = await sh(SCRIPT, ['status'], { env });
    assert.is(status.out.match(/build current up$/gm)?.length, 3, status.out);
    const ping = await api(`/api/runners/${runner.id}/commands`, { method: 'POST', json: { name: 'runner.ping', args: {} } });
    assert.is(ping.status, 200, 'the previous release runner works with the new server');
    const served = Buffer.from(await (await fetch(`${balancer}/svc-runner.mjs`)).arrayBuffer());
    const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');
    assert.is(sha(served), sha(readFileSync(join(ROOT, 'dist', 'svc-runner.mjs'))), '/svc-runner.mjs is the new bundle');
    assert.is.not(sha(served), sha(readFileSync(join(oldDist, 'svc-runner.mjs'))));
    // The data written by the old release reads back.
    const again = await (await api(`/api/projects/${project.id}`)).json();
    assert.is(again.name, 'legacy');
    if (webhookStatus === 201) assert.is((await api('/api/webhooks')).status, 200);
  });
});

test.run();

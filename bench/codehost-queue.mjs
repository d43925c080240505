// Time from an `issues` App delivery to the queue row (issue #36, Figures; part of `npm run
// bench:codehost`): a signed POST /hooks/github/<appPublicId> of GitHub's own `issues` `opened` body
// (npm @octokit/webhooks-examples, moved to the project's repository; the queue holds 100 issues, each
// delivery opens or edits one of them with a new title) leaves the sender; then GET
// /api/projects/:projectId/queue is read back to back until that issue is in it with its new title. Timed from the delivery leaving to the answer that first lists the row, p50/p99 over
// --deliveries sequential deliveries (after --warmup), on one clock (sender and reader in this process).
// Two readers: the server that received the delivery, and a second server process on the same
// PostgreSQL database (what another replica's Fleet page reads). Baseline, interleaved: one GET of the
// queue alone (the reader's own cost; the figure can be no lower than the hook's answer plus one read).
// The real dist/server.mjs (two processes) on a fresh database; admin, runner, project and app made
// through the API; a protocol client stands in for the runner and answers each collector.poll at once.
import { randomUUID } from 'node:crypto';
import { createRequire } from 'node:module';
import { appOnTwoServers, okJson as json } from './codehost-setup.mjs';

export async function queueFigures({ deliveries: N, warmup: WARMUP, log }) {
  const { githubSignature } = await import('../functions/codehost/verify.ts');
  const { freshPostgres } = await import('../test/helpers/db.ts');
  const { connect } = await import('../test/helpers/wsclient.ts');
  const { percentile, round, postgresVersion } = await import('./lib.mjs');
  const examples = createRequire(import.meta.url)('@octokit/webhooks-examples');
  const opened = examples.find((e) => e.name === 'issues').examples.find((b) => b.action === 'opened' && b.repository);
  const stats = (xs) => {
    const s = [...xs].sort((x, y) => x - y);
    return { p50: round(percentile(s, 50)), p99: round(percentile(s, 99)), max: round(s[s.length - 1]) };
  };
  const pg = await freshPostgres();
  const cleanups = [() => pg.drop()];
  try {
    const repo = 'acme/queue-bench';
    const { a, b, runner, project, app } = await appOnTwoServers({ url: pg.url, key: Buffer.alloc(32, 12).toString('base64'), name: 'queue-bench', repo, cleanups });
    const ws = connect(a.url, runner.token);
    await ws.next('welcome');
    cleanups.unshift(async () => (ws.ws.close(), await ws.closed));
    ws.ws.on('message', (d) => {
      const f = JSON.parse(d.toString());
      if (f.type === 'command' && f.name === 'collector.poll') ws.ws.send(JSON.stringify({ type: 'result', requestId: f.requestId, ok: true, data: { polled: true } }));
    });
    const queueUrl = (s) => `${s.url}/api/projects/${project.id}/queue`;
    const auth = { authorization: `Bearer ${a.admin.token}` };
    // A busy queue of ISSUES open issues: delivery i opens (the first time) or edits issue 1000 + i mod
    // ISSUES with a new title; GitHub's updated_at moves one second per delivery, so each is newer.
    const ISSUES = 100;
    const since = Math.floor(Date.now() / 1000) - 3600;
    let i = 0;
    function deliver() {
      const k = i++;
      const n = 1000 + (k % ISSUES);
      const title = `bench issue ${n}, delivery ${k}`;
      const updatedAt = new Date((since + k) * 1000).toISOString().replace('.000Z', 'Z');
      const body = JSON.stringify({ ...opened, action: k < ISSUES ? 'opened' : 'edited', issue: { ...opened.issue, number: n, title, html_url: `https://github.com/${repo}/issues/${n}`, updated_at: updatedAt }, repository: { ...opened.repository, full_name: repo, name: 'queue-bench' } });
      const headers = { 'content-type': 'application/json', 'x-github-event': 'issues', 'x-github-delivery': randomUUID(), 'x-hub-signature-256': githubSignature(app.webhookSecret, body) };
      return { n, title, send: () => fetch(app.webhookUrl, { method: 'POST', headers, body }) };
    }
    /** From the delivery leaving to the first queue answer (of `reader`) that lists the issue. */
    async function timed(reader) {
      const d = deliver();
      const t0 = performance.now();
      const sent = d.send().then(async (res) => {
        await res.arrayBuffer();
        if (res.status !== 202) throw new Error(`delivery ${d.n}: ${res.status}`);
        return performance.now() - t0;
      });
      for (let reads = 0; ; reads++) {
        const q = await json(await fetch(queueUrl(reader), { headers: auth }));
        if (q.issues.some((x) => x.number === d.n && x.title === d.title)) return { visible: performance.now() - t0, answer: await sent, reads: reads + 1 };
        if (performance.now() - t0 > 30_000) throw new Error(`issue ${d.n} not in the queue within 30 s`);
      }
    }
    async function baseline(reader) {
      const t0 = performance.now();
      await json(await fetch(queueUrl(reader), { headers: auth }));
      return performance.now() - t0;
    }
    const figures = { postgres: await postgresVersion(pg.url), deliveries: N, warmup: WARMUP };
    for (const [name, reader] of [['here', a], ['replica', b]]) {
      log(`queue ${name}: ${WARMUP} warm-up + ${N} deliveries, each followed by a baseline read…`);
      const visible = [];
      const answer = [];
      const reads = [];
      const base = [];
      for (let i = 0; i < WARMUP + N; i++) {
        const t = await timed(reader);
        const g = await baseline(reader);
        if (i < WARMUP) continue;
        visible.push(t.visible);
        answer.push(t.answer);
        reads.push(t.reads);
        base.push(g);
      }
      const r = { deliveryToRow: stats(visible), deliveryTo202: stats(answer), queueRead: stats(base), readsPerDelivery: round(reads.reduce((x, y) => x + y, 0) / reads.length) };
      r.ratioP99 = round(r.deliveryToRow.p99 / r.queueRead.p99);
      figures[name] = r;
    }
    const q = await json(await fetch(queueUrl(a), { headers: auth }));
    figures.queueRows = q.issues.length;
    return figures;
  } finally {
    for (const f of cleanups) await f().catch(() => {});
  }
}

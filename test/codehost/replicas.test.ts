// Two server processes on one PostgreSQL (docs/github-app.md): GitHub's delivery reaches one of them,
// the runner's socket is held by the other; collector.poll still arrives, and the runner's answer is
// recorded on the delivery. A redelivery to the OTHER process is a duplicate too (the unique index is
// in the database, not in a process).
import { randomUUID } from 'node:crypto';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { freshPostgres, onlyOn } from '../helpers/db.ts';
import { startServer } from '../helpers/server.ts';
import type { RunningServer } from '../helpers/server.ts';
import { connect, pairRunner } from '../helpers/wsclient.ts';
import type { Client } from '../helpers/wsclient.ts';
import { makeProject, waitFor } from '../triggers/_harness.ts';
import { postGithub } from './_github.ts';

onlyOn('postgres', test, 1, () => {
  let pg: Awaited<ReturnType<typeof freshPostgres>>;
  let servers: RunningServer[] = [];
  let ws: Client;
  test.before(async () => {
    pg = await freshPostgres();
    const env = { APP_ENCRYPTION_KEY: Buffer.alloc(32, 4).toString('base64') };
    const a = await startServer({ admin: true, env, dbEnv: { DATABASE_URL: pg.url } });
    servers = [a, await startServer({ env, dbEnv: { DATABASE_URL: pg.url } })];
  });
  test.after(async () => {
    ws?.ws.close();
    await Promise.all(servers.map((s) => s.cleanup()));
    await pg?.drop();
  });

  test('delivery to process A, runner socket on process B: collector.poll arrives, the answer is recorded; a redelivery to B is a duplicate', async () => {
    const [a, b] = servers;
    const runner = await pairRunner(a.api, a.url, 'replica-gh');
    const projectId = await makeProject(a, runner.runnerId);
    const repo = (await (await a.api(`/api/projects/${projectId}`)).json()).repo as string;
    ws = connect(b.url, runner.token);
    await ws.next('welcome');
    const made = await (await a.api('/api/github-apps', { method: 'POST', json: { name: 'replicas' } })).json();
    const delivery = randomUUID();
    const body = { action: 'opened', issue: { number: 1 }, repository: { full_name: repo.toUpperCase() } };
    assert.is((await postGithub(made.webhookUrl, made.webhookSecret, 'issues', body, { delivery })).status, 202);
    const cmd = await ws.next('command');
    assert.equal([cmd.name, cmd.args], ['collector.poll', { projectId }]);
    ws.send({ type: 'result', requestId: cmd.requestId, ok: true, data: {} });
    const other = made.webhookUrl.replace(a.url, b.url);
    const again = await postGithub(other, made.webhookSecret, 'issues', body, { delivery });
    assert.equal([again.status, again.body.status], [200, 'duplicate']);
    const row = await waitFor('polled', async () => {
      const [d] = (await (await a.api(`/api/github-apps/${made.app.id}/deliveries`)).json()).deliveries;
      return d?.outcome === 'polled' && d;
    });
    assert.equal(row.polls, [{ projectId, runnerId: runner.runnerId, status: 'done' }]);
  });
});

test.run();

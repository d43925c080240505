// GitHub's own webhook bodies (npm @octokit/webhooks-examples, the community's recorded deliveries of
// api.github.com) through the real server's POST /hooks/github/<appPublicId>, signed as GitHub signs:
// every example of issues, issue_comment, pull_request, pull_request_review, check_suite, check_run,
// ping and push is accepted (202 `accepted`, never 400 or 500) and recorded with GitHub's event, action
// and repository; ping → `ping`; one about a repository of a project reaches that project's runner
// (collector.poll, answered by a protocol client) and ends `polled`; one without a repository → `ignored`;
// each is applied to the server's state (issue queue, PR state) without an error in the server's log.
import { randomUUID } from 'node:crypto';
import { createRequire } from 'node:module';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { startServer } from '../helpers/server.ts';
import type { RunningServer } from '../helpers/server.ts';
import { callAs } from '../helpers/users.ts';
import { connect, pairRunner } from '../helpers/wsclient.ts';
import type { Client } from '../helpers/wsclient.ts';
import { waitFor } from '../triggers/_harness.ts';
import { postGithub } from './_github.ts';

const EVENTS = ['issues', 'issue_comment', 'pull_request', 'pull_request_review', 'check_suite', 'check_run', 'ping', 'push'];
interface WebhookExamples {
  name: string;
  examples: Record<string, any>[]; // eslint-disable-line @typescript-eslint/no-explicit-any
}
const all = createRequire(import.meta.url)('@octokit/webhooks-examples') as WebhookExamples[];
const examples = all.filter((e) => EVENTS.includes(e.name)).flatMap((e) => e.examples.map((body) => ({ event: e.name, body })));
const repos = [...new Set(examples.map((x) => x.body.repository?.full_name).filter((r): r is string => typeof r === 'string'))];

let server: RunningServer;
let ws: Client;
let app: { id: string; webhookUrl: string; webhookSecret: string };
let polls = 0;
const call = (path: string, init: { method?: string; json?: unknown } = {}) => callAs(server, path, init);

test.before(async () => {
  server = await startServer({ admin: true, env: { APP_ENCRYPTION_KEY: Buffer.alloc(32, 6).toString('base64') } });
  const runner = await pairRunner(server.api, server.url, 'examples-runner');
  for (const [i, repo] of repos.entries()) {
    const made = await call('/api/projects', { method: 'POST', json: { name: `examples-${i}`, repo, runnerId: runner.runnerId, rootPath: `/srv/examples-${i}` } });
    assert.is(made.status, 201, JSON.stringify(made.body));
  }
  ws = connect(server.url, runner.token);
  await ws.next('welcome');
  // The runner answers every collector.poll at once.
  ws.ws.on('message', (d) => {
    const f = JSON.parse(d.toString());
    if (f.type !== 'command' || f.name !== 'collector.poll') return;
    polls++;
    ws.ws.send(JSON.stringify({ type: 'result', requestId: f.requestId, ok: true, data: { polled: true } }));
  });
  const made = (await call('/api/github-apps', { method: 'POST', json: { name: 'webhook examples' } })).body;
  app = { id: made.app.id, webhookUrl: made.webhookUrl, webhookSecret: made.webhookSecret };
});
test.after(async () => {
  ws?.ws.close();
  await server?.cleanup();
});

test("the examples cover every event the code host reads, most of them about a repository", () => {
  assert.equal([...new Set(examples.map((x) => x.event))].sort(), [...EVENTS].sort());
  assert.ok(examples.length >= 90, `${examples.length} examples`);
  assert.ok(repos.length >= 2, repos.join());
});

test("every example of GitHub's webhook bodies is accepted, recorded with its event, action and repository, and polls the project's runner", async () => {
  const sent: { delivery: string; event: string; action: string | null; repo: string | null }[] = [];
  for (const { event, body } of examples) {
    const delivery = randomUUID();
    const res = await postGithub(app.webhookUrl, app.webhookSecret, event, body, { delivery });
    const repo = typeof body.repository?.full_name === 'string' ? body.repository.full_name : null;
    assert.is(res.status, 202, `${event} ${body.action ?? ''} ${repo}: ${res.status} ${res.text}`);
    assert.equal(res.body, { deliveryId: delivery, status: 'accepted', projects: repo && event !== 'ping' ? 1 : 0 }, `${event} ${body.action ?? ''}`);
    sent.push({ delivery, event, action: typeof body.action === 'string' ? body.action : null, repo });
  }
  const expected = sent.filter((s) => s.repo && s.event !== 'ping').length;
  const rows = await waitFor('every delivery about a project polled', async () => {
    const list = (await call(`/api/github-apps/${app.id}/deliveries?limit=200`)).body.deliveries as Record<string, any>[];
    const mine = list.filter((d) => sent.some((s) => s.delivery === d.deliveryId));
    return mine.length === sent.length && mine.every((d) => d.outcome !== 'polling') && mine;
  }, 60_000);
  for (const s of sent) {
    const row = rows.find((d) => d.deliveryId === s.delivery)!;
    assert.equal([row.event, row.action, row.repo], [s.event, s.action, s.repo], s.delivery);
    assert.is(row.outcome, s.event === 'ping' ? 'ping' : s.repo ? 'polled' : 'ignored', `${s.event} ${s.action} ${s.repo}`);
  }
  assert.is(polls, expected, 'one collector.poll per delivery about a project');
  // The server applied each body to its state at once (the issue queue, the PR state): none failed.
  assert.not.ok(/could not apply a code-host delivery/.test(server.output()), server.output().split('\n').filter((l) => l.includes('could not apply')).join('\n'));
});

test.run();

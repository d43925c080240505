// The pull request's cost block end to end (issue #40 part 1; docs/cost.md "The cost block in the pull
// request"): the real server and the real runner bundle, its code host pointed at the fake GitHub. A slot's
// session on the pull request's branch records its requests; the codehost.cost_blocks job (run now through
// POST /api/schedules/:name/run) sends pr.describe; the runner rewrites the description on GitHub: the
// person's text is kept byte for byte (CRLF included) and the marked block says what the PR cost. Run
// again with nothing changed, GitHub is not written again.
// needs: git
import { execFileSync } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { githubFake } from '../fakes/github.ts';
import type { GitHubFake } from '../fakes/github.ts';
import { startServer } from '../helpers/server.ts';
import type { RunningServer } from '../helpers/server.ts';
import { callAs } from '../helpers/users.ts';
import { killDaemons, runCli, sandbox, startDaemon, waitUntil } from '../runner/_harness.ts';
import type { Daemon, Sandbox } from '../runner/_harness.ts';

const REPO = 'acme/costly';
const PERSON = 'Fixes #1.\r\n\r\nNotes by a person: keep these.\r\n';
let server: RunningServer;
let gh: GitHubFake;
let sb: Sandbox;
let daemon: Daemon;
let projectId = '';
let pr = 0;

async function spool(kind: string, source: string, payload: Record<string, unknown>) {
  const r = await runCli(sb, ['spool-append', kind, '--source', source, '--payload', JSON.stringify(payload)]);
  assert.is(r.status, 0, r.stderr);
}
const patches = () => gh.requests.filter((r) => r.method === 'PATCH' && r.path.startsWith(`/repos/${REPO}/pulls/${pr}`));

test.before(async () => {
  [server, gh] = await Promise.all([startServer({ admin: true }), githubFake()]);
  const p = gh.addPull(REPO, { title: 'Fix the bill', head: 'svc/1/issue-1', body: PERSON });
  pr = p.number;
  sb = sandbox();
  const root = join(sb.home, 'src', 'costly');
  mkdirSync(root, { recursive: true });
  execFileSync('git', ['init', '-q', '-b', 'main', root]);
  const made = await callAs(server, '/api/runners', { method: 'POST', json: { name: 'costly-box' } });
  assert.is(made.status, 201, JSON.stringify(made.body));
  const paired = await runCli(sb, ['pair', '--server', server.url, '--code', made.body.code, '--no-detect']);
  assert.is(paired.status, 0, paired.stderr);
  sb.writeConfig({ ...sb.readConfig(), codehost: { apiUrl: gh.url } });
  const project = await callAs(server, '/api/projects', { method: 'POST', json: { name: 'Costly', repo: REPO, runnerId: made.body.runner.id, rootPath: root } });
  assert.is(project.status, 201, JSON.stringify(project.body));
  projectId = project.body.id;
  // Slot 1's session on the PR's branch, with two requests of claude-sonnet-4-5: 200,000 input tokens
  // at $3 a million and 20,000 output tokens at $15 a million = $0.90.
  const at = new Date(Date.now() - 600_000).toISOString();
  const branch = p.head;
  await spool('pr.opened', `project:${projectId}`, { project: projectId, type: 'pr.opened', data: { pr: { number: pr }, title: p.title, branch }, origin: 'runner' });
  await spool('session.meta', 'sessions', { runtime: 'claude', sessionId: 'sess-cost', source: 'transcript', models: ['claude-sonnet-4-5'], firstAt: at, lastAt: at, project: projectId, slot: '1', issue: '1', branch });
  for (const n of [1, 2])
    await spool('llm.request', 'sessions', {
      ...{ key: `claude:msg_c${n}:req_c${n}`, runtime: 'claude', source: 'transcript', sessionId: 'sess-cost', requestId: `req_c${n}`, messageId: `msg_c${n}` },
      ...{ model: 'claude-sonnet-4-5', at, inputTokens: 100_000, outputTokens: 10_000, cacheWrite5mTokens: 0, cacheWrite1hTokens: 0, cacheReadTokens: 0 },
    });
  daemon = startDaemon(sb, { GH_TOKEN: gh.token, SVC_QUEUE_POLL_MS: '3600000', SVC_PR_POLL_MS: '500', SVC_EVENTS_POLL_MS: '200' });
  await waitUntil(async () => (await callAs(server, `/api/cost?groupBy=pull_request&projectId=${projectId}`)).body?.groups?.some((g: any) => String(g.key) === String(pr)), 30_000, () => `the PR's cost on the server\n${daemon.output().slice(-1500)}`);
});
test.after(async () => {
  await killDaemons();
  sb?.cleanup();
  await gh?.close();
  await server?.cleanup();
});

test('the job writes the block into the description on GitHub through the real runner; the person’s text is untouched; unchanged text is not written again', async () => {
  const pull = () => gh.repo(REPO).pulls.find((x) => x.number === pr)!;
  await waitUntil(
    async () => {
      if (pull().body.includes('<!-- svc:cost -->')) return true;
      const run = await callAs(server, '/api/schedules/codehost.cost_blocks/run', { method: 'POST' });
      assert.is(run.status, 202, JSON.stringify(run.body));
      return false;
    },
    60_000,
    () => `the block on GitHub; the description is ${JSON.stringify(pull().body)}\n${daemon.output().slice(-1500)}`,
  );
  const body = pull().body;
  assert.ok(body.startsWith(PERSON), `the person's text is kept byte for byte: ${JSON.stringify(body)}`);
  const block = body.slice(PERSON.length);
  assert.match(block, /^\r\n<!-- svc:cost -->\r\nThis pull request cost \$0\.90 over 1 agent session \(model claude-sonnet-4-5; tokens 200,000 input, 20,000 output, 0 cache write, 0 cache read\)\.\r\n<!-- \/svc:cost -->\r\n$/);
  assert.is(patches().length, 1, 'one write');
  const [written] = patches();
  assert.equal(Object.keys(written.body), ['body'], 'only the description is sent');
  // Run again: the text has not changed, so GitHub is not written again.
  const again = await callAs(server, '/api/schedules/codehost.cost_blocks/run', { method: 'POST' });
  assert.is(again.status, 202);
  let last: any;
  const job = async () => ((await callAs(server, '/api/schedules')).body.jobs as any[]).find((j) => j.name === 'codehost.cost_blocks');
  await waitUntil(async () => (last = (await job())?.lastRun)?.scheduledFor === again.body.scheduledFor && last.finishedAt !== null, 20_000, () => `the second run ended: ${JSON.stringify(last)}`);
  assert.is(last.result.written, 0, JSON.stringify(last.result));
  assert.is(patches().length, 1, 'unchanged text: no second write');
  assert.is(pull().body, body);
});

test.run();

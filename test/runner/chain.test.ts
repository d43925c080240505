// The whole chain with real parts: an agent runs `svc-runner emit` in a project's worktree → the
// line lands in the project's .svc/events.jsonl → the runner daemon tails it into its spool → the
// real server ingests it → a subscribed webhook receives a signed envelope that the documented
// receiver verifier accepts, with the project, slot, issue and allowlisted data — and no path.
// needs: git
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { verifyWebhook } from '../../docs/examples/verify-webhook.ts';
import { startServer } from '../helpers/server.ts';
import type { RunningServer } from '../helpers/server.ts';
import { killDaemons, runCli, sandbox, startDaemon, waitUntil } from './_harness.ts';
import type { Sandbox } from './_harness.ts';

interface Received {
  headers: IncomingHttpHeaders;
  body: string;
}

let server: RunningServer;
let sb: Sandbox;
const received: Received[] = [];
const receiver = createServer((req, res) => {
  let body = '';
  req.on('data', (d) => (body += d));
  req.on('end', () => {
    received.push({ headers: req.headers, body });
    res.writeHead(204).end();
  });
});

test.before(async () => {
  server = await startServer({ admin: true, env: { APP_ENCRYPTION_KEY: randomBytes(32).toString('base64') } });
  sb = sandbox();
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
});
test.after.each(async () => {
  await killDaemons();
});
test.after(async () => {
  receiver.close();
  await server?.cleanup();
  sb?.cleanup();
});

const git = (cwd: string, ...args: string[]) => execFileSync('git', ['-c', 'user.name=t', '-c', 'user.email=t@example.test', ...args], { cwd, encoding: 'utf8' });

test('svc-runner emit in a worktree reaches a webhook receiver as a verified envelope, once', async () => {
  // A project on disk: a git repository with a slot worktree beside it.
  const root = join(sb.dir, 'work', 'widgets');
  mkdirSync(root, { recursive: true });
  git(root, 'init', '-q', '-b', 'main');
  writeFileSync(join(root, 'README.md'), '# widgets\n');
  git(root, 'add', '.');
  git(root, 'commit', '-qm', 'first');
  const worktree = join(sb.dir, 'work', '.wt-widgets-a');
  git(root, 'worktree', 'add', '-q', '-b', 'svc/a/issue-12', worktree);

  // The server side: a runner, a project on it, a webhook to a loopback receiver (allowlisted).
  const made = await (await server.api('/api/runners', { method: 'POST', json: { name: 'chain' } })).json();
  const paired = await runCli(sb, ['pair', '--server', server.url, '--code', made.code, '--no-detect']);
  assert.is(paired.status, 0, paired.stderr);
  const created = await server.api('/api/projects', { method: 'POST', json: { name: 'widgets', repo: 'acme/widgets', runnerId: made.runner.id, rootPath: root } });
  assert.is(created.status, 201, await created.clone().text());
  const project = await created.json();
  const projectId = project.id ?? project.project?.id;
  assert.ok(projectId, JSON.stringify(project));
  const allow = await server.api('/api/webhooks/allowlist', { method: 'PUT', json: { allowlist: '127.0.0.1' } });
  assert.is(allow.status, 200, await allow.clone().text());
  const hook = await server.api('/api/webhooks', {
    method: 'POST',
    json: { url: `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hooks/svc`, events: ['slot.checkpoint', 'issue.blocked'] },
  });
  assert.is(hook.status, 201, await hook.clone().text());
  const { secret } = await hook.json();

  // The runner learns the project from the server and tails its events file.
  const d = startDaemon(sb, { SVC_EVENTS_POLL_MS: '200' });
  await waitUntil(() => (sb.readConfig().projects ?? []).some((p: { id: string }) => p.id === projectId), 15_000, () => `the watch list in runner.json\n${d.output()}`);

  // What an agent in slot a does; no JSON by hand.
  const env = { SVC_ISSUE: '12' };
  const checkpoint = await runCli(sb, ['emit', 'slot.checkpoint', '--checkpoint', 'pr_open', '--summary', `Opened the fix; notes in ${worktree}/NOTES.md`, '--pr', '34', '--url', 'https://github.com/acme/widgets/pull/34', '--project-root', worktree], env);
  assert.is(checkpoint.status, 0, checkpoint.stderr);
  const internal = await runCli(sb, ['emit', 'round.finished', '--summary', 'internal, never sent', '--project-root', root]);
  assert.is(internal.status, 0, internal.stderr);

  await waitUntil(() => received.length >= 1, 30_000, () => `a delivery\n${d.output()}`);
  const got = received[0];
  assert.is(got.headers['x-svc-event'], 'slot.checkpoint');
  assert.ok(got.headers['x-svc-delivery']);
  assert.equal(verifyWebhook(got.body, got.headers['x-svc-signature'] as string, secret), { ok: true, timestamp: Number(/t=(\d+)/.exec(got.headers['x-svc-signature'] as string)![1]) });
  const envelope = JSON.parse(got.body);
  assert.is(envelope.type, 'slot.checkpoint');
  assert.equal(envelope.project, { id: projectId, repo: 'acme/widgets' });
  assert.is(envelope.slot, 'a');
  assert.is(envelope.issue, 12);
  assert.is(envelope.data.checkpoint, 'pr_open');
  assert.equal(envelope.data.pr, { number: 34, url: 'https://github.com/acme/widgets/pull/34' });
  assert.match(envelope.data.summary, /^Opened the fix; notes in \[path\]/);
  assert.not.match(got.body, new RegExp(sb.dir.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')), 'no file system path in the envelope');

  // A daemon restart re-reads nothing already sent: still one delivery, and the internal type none.
  await d.kill('SIGKILL');
  const again = startDaemon(sb, { SVC_EVENTS_POLL_MS: '200' });
  await again.waitFor(/connected to/, 15_000);
  await new Promise((r) => setTimeout(r, 1500));
  assert.is(received.length, 1, received.map((r) => r.headers['x-svc-event']).join(','));
  await again.kill('SIGTERM');
});

test.run();

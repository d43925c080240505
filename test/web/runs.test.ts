// The admin Runs page in a real browser: runs reported through the real server's hub show with their
// state; Details shows report, patch and progress; Cancel sends skill.cancel to the project's runner.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { Browser } from 'playwright-core';
import { launchBrowser } from '../helpers/browser.ts';
import { startServer } from '../helpers/server.ts';
import type { RunningServer } from '../helpers/server.ts';
import { connect, pairRunner } from '../helpers/wsclient.ts';
import type { Client } from '../helpers/wsclient.ts';

let server: RunningServer;
let browser: Browser;
let runner: Client;
let projectId: string;

const state = (runId: string, s: string, extra: Record<string, unknown> = {}) => ({
  id: `run.${runId}.${s}`,
  source: `project:${projectId}`,
  kind: 'skill_run.state',
  ts: new Date().toISOString(),
  payload: {
    runId,
    project: projectId,
    skill: runId === 'done-1' ? 'review' : 'triage',
    args: ['--since', 'yesterday'],
    output: runId === 'done-1' ? 'pull_request' : 'report',
    profile: 'cc',
    runtime: 'claude',
    createdAt: '2026-11-23T10:00:00.000Z',
    state: s,
    at: new Date().toISOString(),
    ...extra,
  },
});

test.before(async () => {
  [server, browser] = await Promise.all([startServer({ admin: true }), launchBrowser()]);
  const paired = await pairRunner(server.api, server.url, 'runs-page');
  projectId = (await (await server.api('/api/projects', { method: 'POST', json: { name: 'widgets', repo: 'acme/widgets', runnerId: paired.runnerId, rootPath: '/srv/widgets' } })).json()).id;
  runner = connect(server.url, paired.token);
  await runner.next('welcome');
  const patch = 'diff --git a/x b/x\n+hello from the patch\n';
  runner.send({
    type: 'events',
    events: [
      state('live-1', 'running', { startedAt: '2026-11-23T10:00:01.000Z' }),
      state('done-1', 'running', { startedAt: '2026-11-23T10:00:01.000Z' }),
      { id: 'run.done-1.p', source: `project:${projectId}`, kind: 'skill_run.progress', ts: new Date().toISOString(), payload: { runId: 'done-1', project: projectId, lines: [{ seq: 1, text: 'tool: Bash ls' }] } },
      { id: 'run.done-1.patch', source: `project:${projectId}`, kind: 'skill_run.patch', ts: new Date().toISOString(), payload: { runId: 'done-1', project: projectId, bytes: patch.length, sha256: 'ab'.repeat(32), text: patch, truncated: false } },
      state('done-1', 'succeeded', {
        startedAt: '2026-11-23T10:00:01.000Z',
        endedAt: '2026-11-23T10:00:09.000Z',
        result: {
          report: 'All good: nothing to fix.', reportTruncated: false, exitCode: 0, durationMs: 8000, sessionId: 's', costUsd: 0.0123, usage: null,
          pullRequest: { branch: 'svc/run-done-1', base: 'a'.repeat(40), head: 'b'.repeat(40), commits: 1, files: 1, patchBytes: patch.length, patchSha256: 'ab'.repeat(32), url: 'https://github.com/acme/widgets/pull/12', number: 12 },
        },
      }),
    ],
  });
  await runner.next('ack');
});
test.after(async () => {
  runner?.ws.close();
  await browser?.close();
  await server?.cleanup();
});

test('runs with state and cost; details with report, patch and progress; Cancel reaches the runner', async () => {
  const page = await browser.newPage();
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(e.message));
  page.on('dialog', (d) => void d.accept());
  await page.goto(server.url + '/#/runs');
  await page.fill('input[name=email]', server.admin.email);
  await page.fill('input[name=password]', server.admin.password);
  await page.click('form button');
  await page.waitForSelector('tr[data-run=done-1]');
  const done = (await page.textContent('tr[data-run=done-1]')) ?? '';
  assert.match(done, /review/);
  assert.match(done, /succeeded/);
  assert.match(done, /\$0\.0123/);
  assert.match((await page.textContent('tr[data-run=live-1]')) ?? '', /running/);
  assert.is(await page.$('tr[data-run=done-1] button:has-text("Cancel")'), null, 'an ended run has no Cancel');

  await page.click('tr[data-run=done-1] button:has-text("Details")');
  await page.waitForSelector('.run-detail pre.report');
  assert.is((await page.textContent('.run-detail pre.report'))?.trim(), 'All good: nothing to fix.');
  assert.match((await page.textContent('.run-detail pre.patch')) ?? '', /hello from the patch/);
  assert.match((await page.textContent('.run-detail pre.progress')) ?? '', /tool: Bash ls/);
  // The pull request the run opened is linked from its record.
  assert.match((await page.textContent('.run-detail a[href="https://github.com/acme/widgets/pull/12"]')) ?? '', /#12/);

  // Cancel goes to the runner as skill.cancel for that run; the runner answers and reports the state.
  await page.click('tr[data-run=live-1] button:has-text("Cancel")');
  const command = await runner.next('command');
  assert.equal([command.name, command.args], ['skill.cancel', { projectId, runId: 'live-1' }]);
  runner.send({ type: 'result', requestId: command.requestId, ok: true, data: { runId: 'live-1', state: 'cancelled' } });
  runner.send({ type: 'events', events: [state('live-1', 'cancelled', { endedAt: new Date().toISOString() })] });
  await runner.next('ack');
  await page.waitForFunction(() => /cancelled/.test(document.querySelector('tr[data-run=live-1]')?.textContent ?? ''), null, { timeout: 15_000 });
  assert.equal(errors, []);
});

test('a run that did not start (a schedule whose runner is offline) is a row above the runs, with its reason in words; the live page shows it without a reload', async () => {
  const page = await browser.newPage();
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(e.message));
  await page.goto(server.url + '/#/runs');
  await page.fill('input[name=email]', server.admin.email);
  await page.fill('input[name=password]', server.admin.password);
  await page.click('form button');
  await page.waitForSelector('tr[data-run=done-1]');
  assert.is(await page.$('table.failed-starts'), null, 'no section while every run started');
  const away = await pairRunner(server.api, server.url, 'away-box');
  const pid = (await (await server.api('/api/projects', { method: 'POST', json: { name: 'gadgets', repo: 'acme/gadgets', runnerId: away.runnerId, rootPath: '/srv/gadgets' } })).json()).id;
  const sched = await (await server.api(`/api/projects/${pid}/schedules`, { method: 'POST', json: { name: 'nightly triage', cron: '0 3 * * *', skill: 'triage' } })).json();
  assert.is((await server.api(`/api/projects/${pid}/schedules/${sched.id}/run`, { method: 'POST' })).status, 202);
  const row = await page.waitForSelector('table.failed-starts tr[data-reason=runner_offline]', { timeout: 15_000 });
  const text = (await row.textContent()) ?? '';
  assert.match(text, /triage/);
  assert.match(text, /schedule nightly triage/);
  assert.match(text, /Did not start: the project's runner is offline/);
  assert.match(text, /svc-runner status/, 'the remedy');
  assert.equal(errors, []);
});

test.run();

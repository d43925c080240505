// The Activity page in a real browser: fleet events a runner sends through the real server's hub show
// as readable lines with their links (the pull request's address, the run); the Kind filter (a kind or
// a family such as pull requests) narrows the list and lives in the address, beside the project filter.
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
const PR = { number: 12, url: 'https://github.com/acme/widgets/pull/12' };

const ev = (id: string, kind: string, payload: Record<string, unknown>) => ({ id, source: `project:${projectId}`, kind, ts: new Date().toISOString(), payload: { project: projectId, ...payload } });
const run = (state: string) =>
  ev(`run.r-7.${state}`, 'skill_run.state', { runId: 'r-7', skill: 'review', args: [], output: 'report', profile: 'cc', runtime: 'claude', createdAt: new Date().toISOString(), state, at: new Date().toISOString() });

test.before(async () => {
  [server, browser] = await Promise.all([startServer({ admin: true }), launchBrowser()]);
  const paired = await pairRunner(server.api, server.url, 'activity-page');
  projectId = (await (await server.api('/api/projects', { method: 'POST', json: { name: 'widgets', repo: 'acme/widgets', runnerId: paired.runnerId, rootPath: '/srv/widgets' } })).json()).id;
  runner = connect(server.url, paired.token);
  await runner.next('welcome');
  runner.send({
    type: 'events',
    events: [
      ev('e-1', 'slot.dispatched', { slot: 'w1', issue: 4, title: 'Add the widget', branch: 'svc/4-widget' }),
      // pr.* as the runner's poll sends them: the fields under `data` (runner/codehost/changes.ts).
      ev('e-2', 'pr.opened', { slot: 'w1', issue: 4, data: { pr: PR, title: 'Add the widget' } }),
      ev('e-3', 'pr.merged', { data: { pr: PR, title: 'Add the widget' } }),
      run('running'),
      run('failed'),
    ],
  });
  await runner.next('ack');
});
test.after(async () => {
  runner?.ws.close();
  await browser?.close();
  await server?.cleanup();
});

test('each kind reads as a line with its link; the Kind filter narrows to a kind or a family and is kept in the address', async () => {
  const page = await browser.newPage();
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(e.message));
  await page.goto(server.url + '/#/activity');
  await page.fill('input[name=email]', server.admin.email);
  await page.fill('input[name=password]', server.admin.password);
  await page.click('form button');
  await page.waitForSelector('li[data-kind="pr.opened"]');
  assert.match((await page.textContent('li[data-kind="pr.opened"]')) ?? '', /Pull request #12 opened in widgets — Add the widget/);
  assert.is(await page.getAttribute('li[data-kind="pr.opened"] a', 'href'), PR.url);
  assert.match((await page.textContent('li[data-kind="slot.dispatched"]')) ?? '', /In widgets, slot w1 started on issue #4 — Add the widget/);
  assert.match((await page.textContent('li[data-kind="run.failed"]')) ?? '', /Skill review failed in widgets/);
  assert.is(await page.getAttribute('li[data-kind="run.failed"] a', 'href'), '#/runs?run=r-7');
  assert.ok(await page.$('li[data-kind="runner.online"]'), 'the runner coming online is there too');

  // A family: pull requests only.
  await page.selectOption('select[name=kind]', 'pr.*');
  await page.waitForFunction(() => !document.querySelector('li[data-kind="slot.dispatched"]') && document.querySelector('li[data-kind="pr.merged"]'));
  const family = await page.$$eval('li[data-kind]', (lis) => lis.map((li) => li.getAttribute('data-kind')));
  assert.equal(family, ['pr.merged', 'pr.opened']);
  assert.match(page.url(), /kind=pr\.\*/);

  // One kind, with the project filter beside it; a reload keeps both.
  await page.selectOption('select[name=kind]', 'run.failed');
  await page.waitForFunction(() => !document.querySelector('li[data-kind="pr.merged"]') && document.querySelector('li[data-kind="run.failed"]'));
  await page.selectOption('select[name=project]', projectId);
  await page.reload();
  await page.waitForSelector('li[data-kind="run.failed"]');
  assert.equal(await page.$$eval('li[data-kind]', (lis) => lis.map((li) => li.getAttribute('data-kind'))), ['run.failed']);
  assert.is(await page.inputValue('select[name=kind]'), 'run.failed');
  assert.is(await page.inputValue('select[name=project]'), projectId);

  // A kind nothing has happened of yet: the empty note.
  await page.selectOption('select[name=kind]', 'schedule.disabled');
  await page.waitForSelector('.card.empty');
  assert.equal(errors, []);
  await page.close();
});

test.run();

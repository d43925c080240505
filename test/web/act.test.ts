// The action page (#/act/<token>) in a real browser against the real server: opened signed out it asks
// to sign in and comes back to the link; it shows what will happen (the pull request's title, checks,
// cost and diff size read through pr.inspect) and one button; pressing it sends pr.approve to the
// runner and shows the outcome; opened again, it says there is nothing to do.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { Browser } from 'playwright-core';
import { launchBrowser } from '../helpers/browser.ts';
import { startServer } from '../helpers/server.ts';
import type { RunningServer } from '../helpers/server.ts';
import { callAs } from '../helpers/users.ts';
import { connect, pairRunner } from '../helpers/wsclient.ts';
import type { Client } from '../helpers/wsclient.ts';
import { KEY, makeProject, waitFor } from '../triggers/_harness.ts';

let server: RunningServer;
let browser: Browser;
let ws: Client;
let project = '';
const commands: { name: string; args: Record<string, unknown> }[] = [];

test.before(async () => {
  [server, browser] = await Promise.all([startServer({ admin: true, env: { APP_ENCRYPTION_KEY: KEY, NODE_ENV: 'test' } }), launchBrowser()]);
  const r = await pairRunner(server.api, server.url, 'act-page');
  project = await makeProject(server, r.runnerId);
  ws = connect(server.url, r.token);
  await ws.next('welcome');
  // The runner: answers pr.inspect with the pull request as GitHub has it, and pr.approve with done.
  ws.ws.on('message', (d) => {
    const f = JSON.parse(d.toString());
    if (f.type !== 'command') return;
    commands.push({ name: f.name, args: f.args });
    const data = f.name === 'pr.inspect' ? { number: 5, title: 'Fix the login', url: 'https://github.com/acme/app/pull/5', state: 'open', additions: 40, deletions: 2, files: [{}, {}, {}], checks: { state: 'passed', summary: '3 passed' } } : { ok: true };
    ws.send({ type: 'result', requestId: f.requestId, ok: true, data });
  });
  const ts = new Date().toISOString();
  const pr = { number: 5, url: 'https://github.com/acme/app/pull/5' };
  ws.send({ type: 'events', events: [
    { id: `gh.${project}.5.1.opened`, source: `project:${project}`, kind: 'pr.opened', ts, payload: { project, data: { pr, title: 'Fix the login', branch: 'svc/w1/issue-5' } } },
    { id: `gh.${project}.5.1.checks.1`, source: `project:${project}`, kind: 'pr.checks_changed', ts, payload: { project, data: { pr, state: 'passed', summary: '3 passed', sha: 'a'.repeat(40) } } },
  ] });
  await ws.next('ack');
});
test.after(async () => {
  ws?.ws.close();
  await browser?.close();
  await server?.cleanup();
});

test('signed out: sign in, come back to the link, see what will happen, press the one button, see the outcome', async () => {
  const n = await waitFor('pr.ready', async () => ((await callAs(server, '/api/notifications')).body.notifications as any[]).find((x) => x.kind === 'pr.ready'));
  const url: string = n.actions[0].url;
  const page = await (await browser.newContext({ timezoneId: 'UTC' })).newPage();
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(e.message));
  await page.goto(url);
  await page.fill('input[name=email]', server.admin.email);
  await page.fill('input[name=password]', server.admin.password);
  await page.click('form button');
  await page.waitForSelector('.card.act h3:has-text("Approve pull request #5")');
  const card = (await page.textContent('.card.act')) ?? '';
  for (const want of ['Fix the login', 'passed', '3 passed', '+40', '3 file', 'made for you']) assert.ok(card.includes(want), `${want} in ${card}`);
  assert.is(await page.locator('.card.act button').count(), 1, 'one button');
  assert.equal(commands.map((c) => c.name), ['pr.inspect']);
  await page.click('.card.act button:has-text("Approve")');
  await page.waitForSelector('.card.act .outcome:has-text("Pull request #5 approved")');
  assert.equal(commands.map((c) => c.name), ['pr.inspect', 'pr.approve']);
  assert.equal(commands[1].args, { projectId: project, number: 5 });

  await page.reload();
  await page.waitForSelector('.card.act h3:has-text("Nothing to do")');
  assert.match((await page.textContent('.card.act')) ?? '', 'already done');
  assert.equal(commands.length, 2, 'nothing sent again');

  // The notifications list shows the same link, the caller's own, as the notification's button.
  await page.goto(`${server.url}/#/notifications`);
  const button = page.locator('li[data-kind="pr.ready"] a.act-link');
  await button.waitFor();
  assert.equal([await button.textContent(), await button.getAttribute('href')], ['Approve', url]);
  assert.equal(errors, []);
});

test.run();

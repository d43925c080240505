// The Schedules page in a real browser: system jobs, and project schedules with Run now and enable/disable.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { Browser, Page } from 'playwright-core';
import { launchBrowser } from '../helpers/browser.ts';
import { startServer } from '../helpers/server.ts';
import type { RunningServer } from '../helpers/server.ts';
import { connect, pairRunner } from '../helpers/wsclient.ts';
import { makeProject } from '../triggers/_harness.ts';

let server: RunningServer;
let browser: Browser;
test.before(async () => {
  [server, browser] = await Promise.all([startServer({ admin: true }), launchBrowser()]);
});
test.after(async () => {
  await browser?.close();
  await server?.cleanup();
});

async function signIn(page: Page) {
  await page.fill('input[name=email]', server.admin.email);
  await page.fill('input[name=password]', server.admin.password);
  await page.click('form button');
}

test('the Schedules page lists every system job with schedule, next and last run', async () => {
  await server.api('/api/schedules/retention.activity/run', { method: 'POST' });
  const until = Date.now() + 30_000;
  const ran = async () => ((await (await server.api('/api/schedules')).json()).jobs as { name: string; lastRun: { status: string } | null }[]).find((j) => j.name === 'retention.activity')?.lastRun?.status === 'ok';
  while (!(await ran())) {
    if (Date.now() > until) throw new Error('retention.activity did not finish');
    await new Promise((r) => setTimeout(r, 50));
  }
  const page = await browser.newPage();
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(e.message));
  // The page probes /api/me before sign-in; Chromium logs that expected 401 as a console error.
  page.on('console', (m) => m.type() === 'error' && !/status of 401/.test(m.text()) && errors.push(m.text()));
  await page.goto(server.url + '/#/schedules');
  await signIn(page);
  await page.waitForSelector('tr[data-job]');
  const rows = await page.$$eval('tr[data-job]', (trs) => trs.map((tr) => [tr.getAttribute('data-job') ?? '', tr.textContent ?? '']));
  assert.equal(rows.map((r) => r[0]), ['retention.activity', 'retention.events', 'retention.deliveries', 'retention.housekeeping', 'retention.codehost_deliveries', 'audit.verify', 'runners.offline', 'codehost.cost_blocks']);
  assert.match(rows[0][1], /30 4 \* \* \*/);
  assert.match(rows[0][1], /ok/);
  assert.match(rows[1][1], /never/);
  assert.equal(errors, []);
  await page.screenshot({ path: '.tmp/schedules.png' });
});

test('when the API fails the page says so instead of spinning', async () => {
  const page = await browser.newPage();
  await page.route('**/api/schedules', (route) => route.fulfill({ status: 503, body: '{}' }));
  await page.goto(server.url + '/#/schedules');
  await signIn(page);
  const alert = await page.waitForSelector('[role=alert]');
  assert.match((await alert.textContent()) ?? '', /answered 503/);
});

test('Run now starts a job; its result shows under Last run without a reload', async () => {
  const page = await browser.newPage();
  await page.goto(server.url + '/#/schedules');
  await signIn(page);
  await page.waitForSelector('tr[data-job="retention.deliveries"]');
  assert.match((await page.textContent('tr[data-job="retention.deliveries"]')) ?? '', /never/);
  await page.click('tr[data-job="retention.deliveries"] button:has-text("Run now")');
  await page.waitForSelector('[role=status]:has-text("retention.deliveries started")');
  await page.waitForFunction(() => /\bok\b/.test(document.querySelector('tr[data-job="retention.deliveries"] td:nth-child(4)')?.textContent ?? ''), null, { timeout: 30_000 });
  const audit = await (await server.api('/api/audit?action=schedule.run&targetId=retention.deliveries')).json();
  assert.is(audit.records.length, 1, 'audited');
});

test('a project schedule is listed with its zone and next run; Run now sends skill.run to the runner; Disable turns it off', async () => {
  const runner = await pairRunner(server.api, server.url, 'web-sched');
  const projectId = await makeProject(server, runner.runnerId);
  const ws = connect(server.url, runner.token);
  try {
    await ws.next('welcome');
    const made = await server.api(`/api/projects/${projectId}/schedules`, { method: 'POST', json: { name: 'nightly review', cron: '0 3 * * *', timezone: 'Europe/Berlin', skill: 'review', args: ['--since', '1d'] } });
    assert.is(made.status, 201);
    const { id } = await made.json();
    const page = await browser.newPage();
    await page.goto(server.url + '/#/schedules');
    await signIn(page);
    const row = `tr[data-schedule="${id}"]`;
    await page.waitForSelector(row);
    const text = (await page.textContent(row)) ?? '';
    assert.match(text, /nightly review/);
    assert.match(text, /0 3 \* \* \*/);
    assert.match(text, /Europe\/Berlin/);
    assert.match(text, /never/);
    assert.ok((await page.$$('tr[data-job]')).length > 0, 'system jobs next to it for the instance admin');

    await page.click(`${row} button:has-text("Run now")`);
    const cmd = await ws.next('command');
    assert.equal([cmd.name, cmd.args.skill, cmd.args.args], ['skill.run', 'review', ['--since', '1d']]);
    ws.send({ type: 'result', requestId: cmd.requestId, ok: true, data: { runId: 'run-web-1', state: 'queued' } });
    await page.waitForSelector('[role=status]:has-text("nightly review started run run-web-1")');
    await page.waitForFunction((sel) => /started/.test(document.querySelector(sel)?.querySelector('td:nth-child(4)')?.textContent ?? ''), row, { timeout: 30_000 });

    await page.click(`${row} button:has-text("Disable")`);
    await page.waitForSelector(`${row} button:has-text("Enable")`);
    assert.match((await page.textContent(`${row} td:nth-child(3)`)) ?? '', /disabled/);
    const after = await (await server.api(`/api/projects/${projectId}/schedules/${id}`)).json();
    assert.equal([after.enabled, after.lastRun.runId], [false, 'run-web-1']);
    await page.screenshot({ path: '.tmp/schedules-project.png' });
  } finally {
    ws.ws.close();
  }
});

test.run();

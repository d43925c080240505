// The admin Schedules page in a real browser.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { Browser, Page } from 'playwright-core';
import { launchBrowser } from '../helpers/browser.ts';
import { startServer } from '../helpers/server.ts';
import type { RunningServer } from '../helpers/server.ts';

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
  await new Promise((r) => setTimeout(r, 300));
  const page = await browser.newPage();
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(e.message));
  // The page probes /api/me before sign-in; Chromium logs that expected 401 as a console error.
  page.on('console', (m) => m.type() === 'error' && !/status of 401/.test(m.text()) && errors.push(m.text()));
  await page.goto(server.url + '/');
  await signIn(page);
  await page.waitForSelector('tr[data-job]');
  const rows = await page.$$eval('tr[data-job]', (trs) => trs.map((tr) => [tr.getAttribute('data-job') ?? '', tr.textContent ?? '']));
  assert.equal(rows.map((r) => r[0]), ['retention.activity', 'retention.deliveries', 'retention.housekeeping', 'retention.codehost_deliveries', 'audit.verify', 'runners.offline']);
  assert.match(rows[0][1], /30 4 \* \* \*/);
  assert.match(rows[0][1], /ok/);
  assert.match(rows[1][1], /never/);
  assert.equal(errors, []);
  await page.screenshot({ path: '.tmp/schedules.png' });
});

test('when the API fails the page says so instead of spinning', async () => {
  const page = await browser.newPage();
  await page.route('**/api/schedules', (route) => route.fulfill({ status: 503, body: '{}' }));
  await page.goto(server.url + '/');
  await signIn(page);
  const alert = await page.waitForSelector('[role=alert]');
  assert.match((await alert.textContent()) ?? '', /answered 503/);
});

test.run();

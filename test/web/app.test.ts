// The admin app's frame in a real browser: where sign-in lands, unknown routes, the Terminal page of an
// instance without projects, and every page at a phone's width (360 px) without sideways scrolling.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { Browser, Page } from 'playwright-core';
import { launchBrowser } from '../helpers/browser.ts';
import { startServer } from '../helpers/server.ts';
import type { RunningServer } from '../helpers/server.ts';
import { meta, send, tok, transcriptReq, uid } from '../helpers/usage-events.ts';
import { connect, pairRunner } from '../helpers/wsclient.ts';

let server: RunningServer;
let browser: Browser;
let sessionId = '';
test.before(async () => {
  [server, browser] = await Promise.all([startServer({ admin: true }), launchBrowser()]);
  // Something in every table, so wide rows are part of what must fit.
  await server.api('/api/runners', { method: 'POST', json: { name: 'a-machine-with-a-rather-long-name-to-push-the-table-wide' } });
  // A session with requests (no project: the Terminal test below needs none; instance admins see it).
  const paired = await pairRunner(server.api, server.url, 'phone-sessions');
  const ws = connect(server.url, paired.token);
  await ws.next('welcome');
  const sid = `a-rather-long-session-id-${uid()}-${uid()}-${uid()}`;
  await send(ws, [
    meta('claude', sid, { models: ['claude-sonnet-4-5', 'an-unpriced-model-with-a-long-name'] }),
    transcriptReq('claude', sid, 'claude-sonnet-4-5', `req_${uid()}`, tok(123_456, 7890, 45_678, 1234, 2_345_678)),
    transcriptReq('claude', sid, 'an-unpriced-model-with-a-long-name', `req_${uid()}`, tok(10, 20)),
  ]);
  ws.ws.close();
  sessionId = (await (await server.api('/api/sessions')).json()).sessions[0].id;
});
test.after(async () => {
  await browser?.close();
  await server?.cleanup();
});

async function signIn(page: Page, path: string) {
  await page.goto(server.url + path);
  await page.fill('input[name=email]', server.admin.email);
  await page.fill('input[name=password]', server.admin.password);
  await page.click('form button');
}

test('sign-in at the root lands on Getting started (no project yet); an unknown route says not found instead of showing another page', async () => {
  const page = await browser.newPage();
  await signIn(page, '/');
  await page.waitForSelector('h2:has-text("Getting started")');
  assert.is(await page.getAttribute('nav a[href="#/start"]', 'aria-current'), 'page');
  await page.goto(server.url + '/#/no-such-page');
  const alert = await page.waitForSelector('[role=alert]:has-text("Not found")');
  assert.match((await alert.textContent()) ?? '', /#\/no-such-page/);
  assert.is(await page.$('h2:has-text("Schedules")'), null);
  await page.click('a:has-text("Go to Getting started")');
  await page.waitForSelector('h2:has-text("Getting started")');
  await page.click('nav a[href="#/runners"]');
  await page.waitForSelector('h2:has-text("Runners")');
  assert.is(await page.getAttribute('nav a[href="#/runners"]', 'aria-current'), 'page');
  // Each page's main heading names it.
  for (const [route, heading] of [['projects', 'Projects'], ['audit', 'Audit log'], ['activity', 'Activity'], ['settings', 'Settings'], ['notifications', 'Notifications'], ['fleet', 'Fleet']]) {
    await page.goto(`${server.url}/#/${route}`);
    await page.waitForSelector(`main h2:text-is("${heading}")`);
  }
});

test('Terminal with no project on a runner explains what to do instead of an empty select and a black box', async () => {
  const page = await browser.newPage();
  await signIn(page, '/#/terminal');
  const note = await page.waitForSelector('[role=note]');
  assert.match((await note.textContent()) ?? '', /No project has a runner yet/);
  assert.is(await page.$('select[name=project]'), null);
  assert.is(await page.$('.terminal'), null);
});

test('every page at 360 px wide: no sideways scrolling of the page', async () => {
  const context = await browser.newContext({ viewport: { width: 360, height: 800 } });
  const page = await context.newPage();
  await signIn(page, '/#/runners');
  await page.waitForSelector('h2:has-text("Runners")');
  // The pairing notice (long commands) is part of the Runners page.
  await page.fill('input[name=name]', 'phone-check');
  await page.click('form.inline button');
  await page.waitForSelector('[role=status]');
  const wide: string[] = [];
  for (const name of ['runners', 'start', 'projects', 'fleet', 'audit', 'activity', 'notifications', 'runs', 'sessions', `sessions?session=${sessionId}`, 'cost', 'cost?price=an-unpriced-model-with-a-long-name', 'integrations', 'terminal', 'schedules', 'settings']) {
    if (name !== 'runners') {
      await page.goto(`${server.url}/#/${name}`);
      await page.waitForSelector('h2');
      await page.waitForFunction(() => !document.body.textContent?.includes('Loading…'), null, { timeout: 10_000 }).catch(() => {});
    }
    const [scroll, client] = await page.evaluate(() => [document.documentElement.scrollWidth, document.documentElement.clientWidth]);
    if (scroll > client) wide.push(`${name}: ${scroll} > ${client}`);
    if (name === 'runners') await page.screenshot({ path: '.tmp/runners-390.png', fullPage: true });
  }
  assert.equal(wide, []);
  await context.close();
});

test.run();

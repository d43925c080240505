// The bell and the Notifications list in a real browser (Chromium): the unread count in the header,
// newest first, mark one and mark all read (the bell follows at once); and a Slack channel added on
// the Settings page.
import { randomBytes } from 'node:crypto';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { Browser, Page } from 'playwright-core';
import { launchBrowser } from '../helpers/browser.ts';
import { startServer } from '../helpers/server.ts';
import type { RunningServer } from '../helpers/server.ts';
import { connect, pairRunner } from '../helpers/wsclient.ts';

let server: RunningServer;
let browser: Browser;
test.before(async () => {
  [server, browser] = await Promise.all([startServer({ admin: true, env: { APP_ENCRYPTION_KEY: randomBytes(32).toString('base64') } }), launchBrowser()]);
  const r = await pairRunner(server.api, server.url, 'bell-box');
  const project = (await (await server.api('/api/projects', { method: 'POST', json: { name: 'Bells', repo: 'acme/bells', runnerId: r.runnerId, rootPath: '/srv/b' } })).json()).id;
  const ws = connect(server.url, r.token);
  await ws.next('welcome');
  const at = (s: number) => new Date(Date.now() - s * 1000).toISOString();
  ws.send({
    type: 'events',
    events: [
      { id: 'b-1', source: `project:${project}`, kind: 'person.needed', ts: at(60), payload: { project, data: { question: 'First question?' } } },
      { id: 'b-2', source: `project:${project}`, kind: 'pane.quota_hit', ts: at(1), payload: { project, provider: 'openai' } },
    ],
  });
  await ws.next('ack');
  ws.ws.close();
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

const badge = (page: Page) => page.$eval('header .bell', (a) => a.querySelector('.badge')?.textContent ?? null);

test('the bell shows the unread count; the list is newest first; mark one, then all, read', async () => {
  const page = await browser.newPage();
  await signIn(page, '/');
  await page.waitForSelector('header .bell .badge:has-text("2")');
  assert.is(await page.getAttribute('header .bell', 'aria-label'), 'Notifications, 2 unread');
  await page.click('header .bell');
  await page.waitForSelector('h2:has-text("Notifications")');
  await page.waitForFunction(() => document.querySelectorAll('ul.notifications li').length === 2); // the list loads after the heading
  const items = await page.$$eval('ul.notifications li', (lis) => lis.map((li) => [li.getAttribute('data-kind'), li.className]));
  assert.equal(items, [['pane.quota_hit', 'unread'], ['person.needed', 'unread']], 'newest first, both unread');
  assert.match((await page.textContent('ul.notifications li[data-kind="person.needed"] .text')) ?? '', 'First question?');
  await page.click('li[data-kind="person.needed"] button.mark-one');
  await page.waitForSelector('li[data-kind="person.needed"].read');
  await page.waitForSelector('header .bell .badge:has-text("1")');
  await page.click('button.mark-all');
  await page.waitForSelector('li[data-kind="pane.quota_hit"].read');
  await page.waitForFunction(() => !document.querySelector('header .bell .badge'));
  assert.is(await badge(page), null);
  assert.match((await page.textContent('.unread-count')) ?? '', '0 unread');
  // The count survives a reload: it is stored per user on the server.
  await page.reload();
  await page.waitForSelector('.unread-count:has-text("0 unread")');
  assert.is(await badge(page), null);
});

test('Settings: an instance admin adds a Slack channel; a refused address is named next to its field', async () => {
  const page = await browser.newPage();
  await signIn(page, '/#/settings');
  await page.waitForSelector('h3:has-text("Chat channels")');
  await page.fill('form.add-channel input[name=webhookUrl]', 'http://127.0.0.1:9/services/T/B/X');
  await page.click('form.add-channel button[type=submit]');
  await page.waitForSelector('.field-error[data-field=webhookUrl]');
  await page.fill('form.add-channel input[name=name]', 'ops room');
  await page.fill('form.add-channel input[name=webhookUrl]', 'https://hooks.slack.example.com/services/T1/B1/secretpart');
  await page.click('form.add-channel button[type=submit]');
  const row = await page.waitForSelector('table.chat-channels tr[data-channel]');
  const text = (await row.textContent()) ?? '';
  assert.match(text, 'ops room');
  assert.match(text, 'https://hooks.slack.example.com/…');
  assert.not.match(await page.content(), 'secretpart');
});

test.run();

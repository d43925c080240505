// The first admin in a real browser (issue 34, item 2): the empty sign-in page says where the setup
// link is; the link's page takes name, e-mail and password (field errors beside the fields) and lands
// signed in as the new instance admin; afterwards the hint is gone.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { Browser, Page } from 'playwright-core';
import { launchBrowser } from '../helpers/browser.ts';
import { setupLinkOf, startServer } from '../helpers/server.ts';
import type { RunningServer } from '../helpers/server.ts';

let server: RunningServer;
let browser: Browser;
const errors: string[] = [];
test.before(async () => {
  // Both started together; when one fails the other is kept, so test.after can end it.
  const [s, b] = await Promise.allSettled([startServer(), launchBrowser()]);
  if (s.status === 'fulfilled') server = s.value;
  if (b.status === 'fulfilled') browser = b.value;
  if (s.status === 'rejected') throw s.reason;
  if (b.status === 'rejected') throw b.reason;
});
test.after(async () => {
  await browser?.close();
  await server?.cleanup();
});

async function open(path: string): Promise<Page> {
  const page = await (await browser.newContext()).newPage();
  page.on('console', (m) => m.type() === 'error' && !/Failed to load resource: the server responded with a status of 40[01]/.test(m.text()) && errors.push(m.text()));
  page.on('pageerror', (e) => errors.push(e.message));
  await page.goto(server.url + path);
  return page;
}

const HINT = "No admin yet: open the setup link printed in the server's log";

test('the empty sign-in page says to open the setup link from the log', async () => {
  const page = await open('/');
  await page.waitForSelector('.signin[data-setup-needed=true] h2:has-text("Sign in")');
  const hint = await page.waitForSelector('.setup-hint');
  assert.ok(((await hint.textContent()) ?? '').includes(HINT));
  await page.context().close();
});

test('the setup link: field errors beside the fields, then the first admin is made and signed in', async () => {
  const { url } = await setupLinkOf(server);
  const page = await open(url.slice(server.url.length));
  await page.waitForSelector('h2:has-text("Create the first admin")');
  await page.fill('input[name=name]', 'First Admin');
  await page.fill('input[name=email]', 'first@example.test');
  await page.fill('input[name=password]', 'a long first password');
  await page.fill('input[name=again]', 'not the same password');
  await page.click('form button');
  await page.waitForSelector('.field-error[data-field=again]');
  await page.fill('input[name=name]', '   ');
  await page.fill('input[name=again]', 'a long first password');
  await page.click('form button');
  assert.ok(((await (await page.waitForSelector('.field-error[data-field=name]')).textContent()) ?? '').length > 0, 'the blank name is named');
  await page.fill('input[name=name]', 'First Admin');
  await page.click('form button');
  // Signed in: the header names the user, and an instance admin without projects lands on Getting started.
  await page.waitForSelector('header .who:has-text("first@example.test")');
  await page.waitForSelector('main h2:has-text("Getting started")');
  await page.context().close();

  const again = await open('/');
  await again.waitForSelector('.signin h2:has-text("Sign in")');
  await again.waitForSelector('.signin[data-setup-needed=false]'); // GET /api/setup has answered
  assert.is(await again.$('.setup-hint'), null, 'no hint once an admin exists');
  await again.context().close();
  assert.equal(errors, []);
});

test.run();

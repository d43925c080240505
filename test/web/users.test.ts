// Settings in a real browser (issue 16): an instance admin invites a user and gets a one-time link
// (field errors beside the field), the link sets the password, the new user's Settings shows only
// their own API tokens; a token is shown once and works until revoked; disabling a user signs them
// out; retention is listed read-only.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { Browser, Page } from 'playwright-core';
import { launchBrowser } from '../helpers/browser.ts';
import { startServer } from '../helpers/server.ts';
import type { RunningServer } from '../helpers/server.ts';

let server: RunningServer;
let browser: Browser;
const errors: string[] = [];
test.before(async () => {
  [server, browser] = await Promise.all([startServer({ admin: true }), launchBrowser()]);
});
test.after(async () => {
  await browser?.close();
  await server?.cleanup();
});

async function open(path: string, who?: { email: string; password: string }): Promise<Page> {
  const page = await (await browser.newContext()).newPage();
  page.on('console', (m) => m.type() === 'error' && !/Failed to load resource: the server responded with a status of 40[01]/.test(m.text()) && errors.push(m.text()));
  page.on('pageerror', (e) => errors.push(e.message));
  await page.goto(server.url + path);
  if (who) {
    await page.fill('input[name=email]', who.email);
    await page.fill('input[name=password]', who.password);
    await page.click('form button');
    await page.waitForSelector('main h2');
  }
  return page;
}

const NEW = { email: 'new.person@example.test', password: 'a long enough password 1' };

test('invite: field errors beside the fields, then a one-time link that sets the password; the user signs in and sees only their tokens', async () => {
  const page = await open('/#/settings', server.admin);
  await page.waitForSelector('section.users form.invite');
  await page.fill('section.users input[name=email]', 'not-an-email');
  await page.click('section.users button:has-text("Invite")');
  assert.match((await (await page.waitForSelector('section.users .field-error[data-field=email]')).textContent()) ?? '', /e-mail/);
  assert.ok(await page.$('section.users .field-error[data-field=name]'), 'the empty name too');
  await page.fill('section.users input[name=email]', NEW.email);
  await page.fill('section.users input[name=name]', 'New Person');
  await page.click('section.users button:has-text("Invite")');
  const url = ((await (await page.waitForSelector('dialog[open] pre.copytext')).textContent()) ?? '').trim();
  assert.match(url, /#\/set-password\?token=/);
  await page.click('dialog[open] button:has-text("Done")');
  await page.waitForSelector(`tr[data-user="${NEW.email}"]:has-text("invited")`);
  // Retention is there, read-only.
  assert.match((await page.textContent('section.retention')) ?? '', /ACTIVITY_RETENTION_DAYS/);
  assert.is(await page.$('section.retention button, section.retention input'), null);

  const invited = await open(url.replace(/^https?:\/\/[^/]+/, ''));
  await invited.fill('input[name=password]', NEW.password);
  await invited.fill('input[name=again]', NEW.password);
  await invited.click('form button');
  await invited.waitForSelector('h2:has-text("Password set")');
  await invited.context().close();

  const user = await open('/#/settings', NEW);
  await user.waitForSelector('section.tokens');
  assert.is(await user.$('section.users, .encryption-key, section.retention'), null, 'instance settings are not shown to a user');
  const links = await user.$$eval('nav a', (as) => as.map((a) => a.getAttribute('href')));
  assert.not.ok(links.includes('#/audit') || links.includes('#/runners'));
  // A token: shown once, works, then revoked stops working.
  await user.fill('section.tokens input[name=name]', 'laptop');
  await user.click('section.tokens button:has-text("Create token")');
  const token = ((await (await user.waitForSelector('.new-token pre.copytext')).textContent()) ?? '').trim();
  const me = await fetch(`${server.url}/api/me`, { headers: { authorization: `Bearer ${token}` } });
  assert.is(me.status, 200);
  assert.is((await me.json()).user.email, NEW.email);
  await user.click('tr[data-token=laptop] button:has-text("Revoke")');
  await user.waitForSelector('tr[data-token=laptop]', { state: 'detached' });
  assert.is((await fetch(`${server.url}/api/me`, { headers: { authorization: `Bearer ${token}` } })).status, 401);
  await user.context().close();
  await page.context().close();
});

test('disable a user: their session ends; enable again; the admin cannot disable itself (no button)', async () => {
  const user = await open('/#/settings', NEW);
  await user.waitForSelector('section.tokens');
  const page = await open('/#/settings', server.admin);
  await page.click(`tr[data-user="${NEW.email}"] button:has-text("Disable")`);
  await page.waitForSelector(`tr[data-user="${NEW.email}"]:has-text("disabled")`);
  await user.reload();
  await user.waitForSelector('h2:has-text("Sign in")');
  assert.is(await page.$(`tr[data-user="${server.admin.email}"] button`), null, 'no Disable on yourself');
  await page.click(`tr[data-user="${NEW.email}"] button:has-text("Enable")`);
  await page.waitForSelector(`tr[data-user="${NEW.email}"]:has-text("active")`);
  await page.context().close();
  await user.context().close();
});

test('no console errors', () => assert.equal(errors, []));

test.run();

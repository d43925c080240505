// The Recover button of the Integrations page (pages/webhook-recover.ts) in a real browser against the
// real server: a webhook whose deliveries really failed at a loopback receiver; its Deliveries panel
// has a date picker (a day back unless changed) and "Recover failed deliveries": the page says how many
// were queued, the receiver gets them again with their original delivery ids, and pressing it again
// says 0.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { Browser, Page } from 'playwright-core';
import { launchBrowser } from '../helpers/browser.ts';
import { startServer } from '../helpers/server.ts';
import type { RunningServer } from '../helpers/server.ts';
import { receiver, sleep } from './_harness.ts';
import type { Receiver } from './_harness.ts';
import { preparedFailures } from './_recover.ts';
import type { Prepared } from './_recover.ts';

let server: RunningServer;
let browser: Browser;
let rx: Receiver;
let prepared: Prepared;

test.before(async () => {
  rx = await receiver();
  prepared = await preparedFailures(rx);
  [server, browser] = await Promise.all([startServer({ admin: true, dbEnv: prepared.env }), launchBrowser()]);
});
test.after(async () => {
  await browser?.close();
  await server?.cleanup();
  await rx?.close();
  await prepared?.drop();
});

async function signedIn(): Promise<Page> {
  const page = await (await browser.newContext()).newPage();
  await page.goto(server.url + '/#/integrations');
  await page.fill('input[name=email]', server.admin.email);
  await page.fill('input[name=password]', server.admin.password);
  await page.click('form button');
  await page.waitForSelector('form.add-webhook');
  return page;
}

test('Recover failed deliveries: the date picker, the count queued, the original ids at the receiver; again → 0', async () => {
  const page = await signedIn();
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(e.message));
  rx.handle((_req, res) => res.end('back'));
  await page.click(`tr[data-webhook="${prepared.hook.url}"] button:has-text("Deliveries")`);
  const picker = await page.waitForSelector('form.recover-deliveries input[type=datetime-local][name=since]');
  const dayAgo = new Date(await picker.inputValue()).getTime();
  assert.ok(Math.abs(Date.now() - 24 * 3600_000 - dayAgo) < 5 * 60_000, 'a day back unless changed');
  await page.click('form.recover-deliveries button:has-text("Recover failed deliveries")');
  assert.is(await (await page.waitForSelector('form.recover-deliveries [role=status]')).textContent(), '2 deliveries queued again');
  for (const end = Date.now() + 15_000; rx.requests.length < 2 && Date.now() < end; ) await sleep(50);
  assert.equal(rx.requests.map((r) => String(r.headers['x-svc-delivery'])).sort(), prepared.recentFailed);

  await page.click('form.recover-deliveries button:has-text("Recover failed deliveries")');
  await page.waitForSelector('form.recover-deliveries [role=status]:has-text("0 deliveries queued again")');
  assert.equal(errors, []);
});

test.run();

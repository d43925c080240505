// The admin Settings page and what a changed encryption key looks like on the pages, in a real browser
// against the real server (issue 12, items 3 and 4): the key's source, file and fingerprint with "back
// this file up separately"; after a restart with another key, the webhook says "Secret unavailable —
// rotate", Send test is refused with the reason, and the instance secret says to enter it again.
import { randomBytes } from 'node:crypto';
import { dirname, join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { Browser, Page } from 'playwright-core';
import { keyId } from '../../functions/lib/crypto.ts';
import { launchBrowser } from '../helpers/browser.ts';
import { TEST_DB, serverDbEnv } from '../helpers/db.ts';
import { startServer } from '../helpers/server.ts';
import type { Admin, RunningServer } from '../helpers/server.ts';

const KEY_A = randomBytes(32).toString('base64');
const KEY_B = randomBytes(32).toString('base64');
const HOOK_URL = 'https://hooks.example/settings';

let browser: Browser;
let dbEnv: Record<string, string>;
let drop: () => Promise<void>;
let server: RunningServer;
let admin: Admin;

test.before(async () => {
  const fresh = await serverDbEnv();
  ({ env: dbEnv, cleanup: drop } = fresh);
  browser = await launchBrowser();
});
test.after(async () => {
  await browser?.close();
  await server?.cleanup();
  await drop?.();
});

async function open(path: string): Promise<Page> {
  const page = await (await browser.newContext()).newPage();
  page.on('dialog', (d) => void d.accept());
  await page.goto(server.url + path);
  await page.fill('input[name=email]', admin.email);
  await page.fill('input[name=password]', admin.password);
  await page.click('form button');
  return page;
}

test('the Settings page shows where the key comes from, its fingerprint, the backup note, and no instance-wide secrets', async () => {
  // PGlite without a key: the generated file. PostgreSQL: the environment (a key is required there).
  server = await startServer({ dbEnv, admin: true, env: TEST_DB === 'postgres' ? { APP_ENCRYPTION_KEY: KEY_A } : {} });
  admin = server.admin;
  assert.is((await server.api('/api/webhooks', { method: 'POST', json: { url: HOOK_URL, events: ['pr.merged'] } })).status, 201);
  const page = await open('/#/settings');
  const card = await page.waitForSelector('.encryption-key');
  const text = (await card.textContent()) ?? '';
  const status = await (await server.api('/api/settings/encryption-key')).json();
  if (TEST_DB === 'postgres') {
    assert.is(await card.getAttribute('data-key-source'), 'environment');
    assert.match(text, /from the APP_ENCRYPTION_KEY environment variable/);
    assert.ok(text.includes(keyId(Buffer.from(KEY_A, 'base64'))), 'the fingerprint');
  } else {
    const file = join(dirname(dbEnv.PGLITE_DATA_DIR), 'encryption.key');
    assert.is(await card.getAttribute('data-key-source'), 'file');
    assert.match(text, /generated on first start/);
    assert.ok(text.includes(file), 'the key file path');
    assert.match(text, /Back this file up separately/);
  }
  assert.is((await page.textContent('.encryption-key .fingerprint'))?.trim(), status.fingerprint);
  // No instance-wide secrets: each is entered where it is used (GitHub App, chat channel, webhook, trigger).
  assert.is(await page.$('table.secrets'), null);
  assert.not.match((await page.textContent('main')) ?? '', /Instance secrets|chat\.bot_token/);
  assert.is(await page.getAttribute('nav a[href="#/settings"]', 'aria-current'), 'page');
  await page.context().close();
});

test('after a restart with another key: "Secret unavailable — rotate" on the webhook, Send test refused with the reason, the new fingerprint on Settings', async () => {
  assert.is(await server.stop(), 0);
  await server.cleanup();
  server = await startServer({ dbEnv, env: { APP_ENCRYPTION_KEY: KEY_B } });
  const page = await open('/#/integrations');
  const row = await page.waitForSelector(`tr[data-webhook="${HOOK_URL}"]`);
  assert.match((await row.textContent()) ?? '', /Secret unavailable — rotate/);
  await page.click(`tr[data-webhook="${HOOK_URL}"] button:has-text("Send test")`);
  const banner = await page.waitForSelector('[role=alert]');
  assert.is((await banner.textContent())?.trim(), "this webhook's secret was encrypted with another APP_ENCRYPTION_KEY: rotate it first");
  assert.is(await page.$('table.deliveries tr[data-delivery]'), null, 'nothing queued');

  // Rotating clears the mark (and the banner, as any successful action does).
  await page.click(`tr[data-webhook="${HOOK_URL}"] button:has-text("Rotate secret")`);
  await page.waitForSelector('.secret pre');
  await page.waitForSelector('[role=alert]', { state: 'detached' });
  await page.waitForFunction((url) => !/Secret unavailable/.test(document.querySelector(`tr[data-webhook="${url}"]`)?.textContent ?? ''), HOOK_URL);

  await page.goto(server.url + '/#/settings');
  await page.waitForSelector('.encryption-key[data-key-source="environment"]');
  assert.is((await page.textContent('.encryption-key .fingerprint'))?.trim(), keyId(Buffer.from(KEY_B, 'base64')));
  await page.context().close();
});

test.run();

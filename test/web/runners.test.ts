// The admin Runners page in a real browser: add a runner, see its code, status and remedy, revoke it.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { Browser } from 'playwright-core';
import { launchBrowser } from '../helpers/browser.ts';
import { startServer } from '../helpers/server.ts';
import type { RunningServer } from '../helpers/server.ts';
import { connect } from '../helpers/wsclient.ts';

let server: RunningServer;
let browser: Browser;
test.before(async () => {
  [server, browser] = await Promise.all([startServer({ admin: true }), launchBrowser()]);
});
test.after(async () => {
  await browser?.close();
  await server?.cleanup();
});

test('add a runner → pairing code and command shown; pairing + connecting → online; revoke → revoked', async () => {
  const page = await browser.newPage();
  page.on('dialog', (d) => void d.accept());
  await page.goto(server.url + '/#/runners');
  await page.fill('input[name=email]', server.admin.email);
  await page.fill('input[name=password]', server.admin.password);
  await page.click('form button');
  await page.waitForSelector('input[name=name]');
  await page.fill('input[name=name]', 'build-box');
  await page.click('form.inline button');
  const notice = await page.waitForSelector('[role=status]');
  const text = (await notice.textContent()) ?? '';
  const code = /([A-Z2-9]{4}-[A-Z2-9]{4})/.exec(text)![1];
  assert.match(text, new RegExp(`svc-runner pair --server ${server.url} --code ${code}`));
  assert.match((await page.textContent('tr[data-runner=build-box]')) ?? '', /unpaired/);

  const pair = await fetch(`${server.url}/runners/pair`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ code }) });
  const { token } = await pair.json();
  const c = connect(server.url, token);
  await c.next('welcome');
  await page.reload();
  await page.waitForSelector('tr[data-runner=build-box] .ok');
  assert.match((await page.textContent('tr[data-runner=build-box]')) ?? '', /online/);
  await page.screenshot({ path: '.tmp/runners.png' });

  c.ws.close();
  await c.closed;
  await page.reload();
  await page.waitForSelector('tr[data-runner=build-box] .failed');
  assert.match((await page.textContent('tr[data-runner=build-box] .remedy')) ?? '', /svc-runner status/);

  await page.click('tr[data-runner=build-box] button');
  await page.waitForFunction(() => document.querySelector('tr[data-runner=build-box]')?.textContent?.includes('revoked'));
  assert.is(await connect(server.url, token).closed, 4401);
});

test.run();

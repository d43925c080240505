// The admin Integrations page (outbound webhooks) in a real browser against the real server and a
// real loopback receiver: allowlist, add (secret shown once), send test → delivered in the log,
// rotate (new secret shown), a failing receiver's answer in the log, delete; the circuit state in the
// spec's words as it moves (live, no reload): "Delivery paused (receiver failing)" once the receiver
// failed 10 times, "Trying the receiver again" when the pause is over (PostgreSQL only: the test moves
// the pause into the past in the database), and Resume deliveries closing it.
import { randomBytes } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { Browser, Page } from 'playwright-core';
import postgres from 'postgres';
import { verifyWebhook } from '../../docs/examples/verify-webhook.ts';
import { launchBrowser } from '../helpers/browser.ts';
import { onlyOn, serverDbEnv } from '../helpers/db.ts';
import { startServer } from '../helpers/server.ts';
import type { RunningServer } from '../helpers/server.ts';

let server: RunningServer;
let browser: Browser;
let dbEnv: Record<string, string>;
let dropDb: (() => Promise<void>) | undefined;
let status = 204;
/** While set, the receiver never answers (the worker gives up at its 10 s attempt deadline). */
let hang = false;
const received: { event: string; body: string; signature: string }[] = [];
const receiver = createServer((req, res) => {
  let body = '';
  req.on('data', (d) => (body += d));
  req.on('end', () => {
    received.push({ event: String(req.headers['x-svc-event']), body, signature: String(req.headers['x-svc-signature']) });
    if (hang) return;
    res.writeHead(status).end(status >= 400 ? 'receiver says no' : undefined);
  });
});

test.before(async () => {
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
  const db = await serverDbEnv();
  [dbEnv, dropDb] = [db.env, db.cleanup];
  [server, browser] = await Promise.all([startServer({ admin: true, dbEnv, env: { APP_ENCRYPTION_KEY: randomBytes(32).toString('base64') } }), launchBrowser()]);
});
test.after(async () => {
  await browser?.close();
  await server?.cleanup();
  await dropDb?.();
  receiver.closeAllConnections();
  receiver.close();
});

async function signedIn(): Promise<Page> {
  const context = await browser.newContext({ permissions: ['clipboard-read', 'clipboard-write'] });
  const page = await context.newPage();
  page.on('dialog', (d) => void d.accept());
  await page.goto(server.url + '/#/integrations');
  await page.fill('input[name=email]', server.admin.email);
  await page.fill('input[name=password]', server.admin.password);
  await page.click('form button');
  await page.waitForSelector('form.add-webhook');
  return page;
}

test('allowlist, add a webhook with its secret shown once, send test, rotate, a failing answer in the log, delete', async () => {
  const page = await signedIn();
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(e.message));

  // A loopback receiver needs the allowlist; a bad line is refused with its line named.
  await page.waitForSelector('textarea[name=allowlist]');
  await page.fill('textarea[name=allowlist]', 'not a host!!');
  await page.click('form.allowlist button');
  assert.match(await (await page.waitForSelector('[role=alert]')).textContent() ?? '', /line1/);
  await page.fill('textarea[name=allowlist]', '127.0.0.1');
  await page.click('form.allowlist button');
  await page.waitForSelector('form.allowlist [role=status]');

  const url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/svc`;
  await page.fill('input[name=url]', url);
  await page.check('input[name=events][value="pr.opened"]');
  await page.click('form.add-webhook button');
  const secretBox = await page.waitForSelector('.secret pre');
  const secret = (await secretBox.textContent())!.trim();
  assert.ok(secret.length >= 32);
  await page.click('.secret button:has-text("Copy")');
  assert.is(await page.evaluate(() => navigator.clipboard.readText()), secret, 'Copy puts exactly the secret on the clipboard');
  await page.click('.secret button:has-text("I have copied it")');
  const row = await page.waitForSelector(`tr[data-webhook="${url}"]`);
  assert.match((await row.textContent()) ?? '', /pr\.opened/);
  assert.match((await row.textContent()) ?? '', /Delivering/);
  assert.not.match(await page.content(), new RegExp(secret), 'the secret is gone from the page');

  // Send test: the receiver gets a webhook.test signed with that secret; the log says delivered.
  await page.click(`tr[data-webhook="${url}"] button:has-text("Send test")`);
  await page.waitForSelector('table.deliveries tr[data-delivery]', { timeout: 15_000 });
  const until = Date.now() + 15_000;
  while (received.length === 0 && Date.now() < until) await new Promise((r) => setTimeout(r, 50));
  assert.is(received[0]?.event, 'webhook.test');
  assert.is(verifyWebhook(received[0].body, received[0].signature, secret).ok, true);
  // The delivery links to its event (GET /api/events/:eventId): opened, the envelope exactly as received.
  const eventId = JSON.parse(received[0].body).id as string;
  await page.click(`details[data-event="${eventId}"] summary`);
  await page.waitForFunction((id) => (document.querySelector(`details[data-event="${id}"] pre`)?.textContent ?? '').includes('"type": "webhook.test"'), eventId, { timeout: 15_000 });
  assert.equal(JSON.parse((await page.textContent(`details[data-event="${eventId}"] pre`))!), JSON.parse(received[0].body));

  // Rotate: a new secret is shown, and the next test is signed with it.
  await page.click(`tr[data-webhook="${url}"] button:has-text("Rotate secret")`);
  const rotated = (await (await page.waitForSelector('.secret pre')).textContent())!.trim();
  assert.is.not(rotated, secret);
  await page.click('.secret button:has-text("I have copied it")');

  // A failing receiver: the attempt's status code and body show in the log (the delivery stays
  // pending for its retry in 30 s).
  status = 500;
  await page.click(`tr[data-webhook="${url}"] button:has-text("Send test")`);
  const deadline = Date.now() + 15_000;
  while (received.length < 2 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
  assert.is(received.length, 2);
  assert.is(verifyWebhook(received[1].body, received[1].signature, rotated).ok, true);
  // The attempt is recorded just after the receiver answered: the open log refreshes by itself.
  await page.waitForFunction(() => /500/.test(document.querySelector('table.deliveries')?.textContent ?? ''), null, { timeout: 30_000 });
  assert.match((await page.textContent('table.deliveries')) ?? '', /500/);
  assert.match((await page.textContent('table.deliveries')) ?? '', /receiver says no/);

  await page.click(`tr[data-webhook="${url}"] button:has-text("Delete")`);
  await page.waitForSelector(`tr[data-webhook="${url}"]`, { state: 'detached' });
  assert.equal(errors, []);
});

test('a bad Add webhook shows its reason once, in plain words; the banner goes away after a successful action', async () => {
  const page = await signedIn();
  await page.fill('input[name=url]', 'https://hooks.example/banner');
  await page.click('form.add-webhook button'); // no event chosen
  const banner = await page.waitForSelector('[role=alert]');
  assert.is((await banner.textContent())?.trim(), 'Choose at least one event');
  assert.is(await page.$('tr[data-webhook="https://hooks.example/banner"]'), null, 'nothing was added');

  await page.check('input[name=events][value="pr.merged"]');
  await page.click('form.add-webhook button');
  await page.waitForSelector('.secret pre');
  await page.waitForSelector('[role=alert]', { state: 'detached' });
  await page.click('.secret button:has-text("I have copied it")');
  await page.waitForSelector('tr[data-webhook="https://hooks.example/banner"]');

  // The same for the allowlist form: a refused save, then a good one clears the banner.
  await page.fill('textarea[name=allowlist]', 'not a host!!');
  await page.click('form.allowlist button');
  assert.match((await (await page.waitForSelector('[role=alert]')).textContent()) ?? '', /allowlist\.line1: /);
  await page.fill('textarea[name=allowlist]', '127.0.0.1');
  await page.click('form.allowlist button');
  await page.waitForSelector('form.allowlist [role=status]');
  assert.is(await page.$('[role=alert]'), null);
  await page.context().close();
});


const receiverUrl = (path: string) => `http://127.0.0.1:${(receiver.address() as AddressInfo).port}${path}`;
const circuitText = (page: Page, url: string, text: string, timeout = 30_000) =>
  page.waitForFunction(([u, t]) => document.querySelector(`tr[data-webhook="${u}"]`)?.textContent?.includes(t) ?? false, [url, text] as const, { timeout });

/** A webhook to the (failing) receiver, made through the API; 10 test deliveries fail: its circuit opens. */
async function failingWebhook(path: string): Promise<{ id: string; url: string }> {
  assert.is((await server.api('/api/webhooks/allowlist', { method: 'PUT', json: { allowlist: '127.0.0.1' } })).status, 200);
  const made = await server.api('/api/webhooks', { method: 'POST', json: { url: receiverUrl(path), events: ['pr.opened'] } });
  assert.is(made.status, 201);
  return { id: (await made.json()).id, url: receiverUrl(path) };
}
async function failTenTimes(id: string): Promise<void> {
  status = 500;
  for (let i = 0; i < 10; i++) assert.is((await server.api(`/api/webhooks/${id}/test`, { method: 'POST' })).status, 202);
}

test('10 failed attempts: "Delivery paused (receiver failing)" shows without a reload, with Resume deliveries; Resume: Delivering again', async () => {
  const hook = await failingWebhook('/circuit');
  const page = await signedIn();
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(e.message));
  page.on('console', (m) => m.type() === 'error' && errors.push(m.text()));
  await circuitText(page, hook.url, 'Delivering');
  assert.is(await page.$(`tr[data-webhook="${hook.url}"] button:has-text("Resume deliveries")`), null, 'nothing to resume while delivering');
  await page.evaluate(() => ((window as unknown as { marker: number }).marker = 1));
  await failTenTimes(hook.id);
  await circuitText(page, hook.url, 'Delivery paused (receiver failing)');
  assert.match((await page.textContent(`tr[data-webhook="${hook.url}"]`)) ?? '', /until /, 'when it tries again');
  status = 204;
  await page.click(`tr[data-webhook="${hook.url}"] button:has-text("Resume deliveries")`);
  await circuitText(page, hook.url, 'Delivering', 15_000);
  assert.is(await page.$(`tr[data-webhook="${hook.url}"] button:has-text("Resume deliveries")`), null);
  assert.ok(await page.evaluate(() => (window as unknown as { marker?: number }).marker === 1), 'the page was not reloaded');
  const [rec] = (await (await server.api('/api/audit?action=webhook.resume')).json()).records;
  assert.is(rec.targetId, hook.id, 'Resume is audited');
  assert.equal(errors, []);
  await page.context().close();
});

onlyOn('postgres', test, 1, () => {
  test('the pause over: "Trying the receiver again" while the trial delivery is out, paused again when it fails, then Resume — all without a reload', async () => {
    const hook = await failingWebhook('/half-open');
    const page = await signedIn();
    const errors: string[] = [];
    page.on('pageerror', (e) => errors.push(e.message));
    page.on('console', (m) => m.type() === 'error' && errors.push(m.text()));
    await circuitText(page, hook.url, 'Delivering');
    await page.evaluate(() => ((window as unknown as { marker: number }).marker = 1));
    await failTenTimes(hook.id);
    await circuitText(page, hook.url, 'Delivery paused (receiver failing)');
    // The 15-minute pause, moved into the past: the worker's next sweep makes it half-open and sends one
    // trial delivery, which the receiver holds until the attempt's deadline.
    hang = true;
    const db = postgres(dbEnv.DATABASE_URL, { max: 1, onnotice: () => {} });
    try {
      await db`update webhooks set circuit_opened_at = now() - interval '16 minutes' where id = ${hook.id}`;
    } finally {
      await db.end();
    }
    await circuitText(page, hook.url, 'Trying the receiver again', 15_000);
    assert.ok(await page.$(`tr[data-webhook="${hook.url}"] button:has-text("Resume deliveries")`), 'Resume is offered while trying, too');
    await circuitText(page, hook.url, 'Delivery paused (receiver failing)');
    hang = false;
    status = 204;
    await page.click(`tr[data-webhook="${hook.url}"] button:has-text("Resume deliveries")`);
    await circuitText(page, hook.url, 'Delivering', 15_000);
    assert.ok(await page.evaluate(() => (window as unknown as { marker?: number }).marker === 1), 'the page was not reloaded');
    assert.equal(errors, []);
    await page.context().close();
  });
});

test.run();

// The Inbound triggers section of the admin Integrations page in a real browser against the real server:
// create (secret shown once; the copied curl script run with sh and the copied TypeScript sender run with
// node both get 202, and their deliveries show in the log), dry run (would fire / would be refused /
// not JSON), field errors beside the form, edit, disable → 404, rotate → the old secret still verifies,
// the delivery log (refreshing, paged, linking to the run it started), only projects the user
// administers, and no sideways scrolling at 390 px. The project's runner is offline unless a test
// connects a protocol client as the runner: deliveries then end `failed` with `runner_offline`.
// needs: openssl curl
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { Browser, Page } from 'playwright-core';
import { launchBrowser } from '../helpers/browser.ts';
import { ROOT } from '../helpers/db.ts';
import { callAs, makeUser } from '../helpers/users.ts';
import { connect } from '../helpers/wsclient.ts';
import { createTrigger, deliveries, makeProject, post, setup, skillTrigger, waitFor } from '../triggers/_harness.ts';
import type { Setup } from '../triggers/_harness.ts';

let s: Setup;
let browser: Browser;
let offline: string; // a project whose runner never connects

test.before(async () => {
  [s, browser] = await Promise.all([setup(), launchBrowser()]);
  const runner = await callAs(s.server, '/api/runners', { method: 'POST', json: { name: 'never-online' } });
  offline = await makeProject(s.server, runner.body.runner.id);
});
test.after(async () => {
  await browser?.close();
  await s?.server.cleanup();
});

async function signedIn(opts: { width?: number; email?: string; password?: string } = {}): Promise<Page> {
  const context = await browser.newContext({ permissions: ['clipboard-read', 'clipboard-write'], viewport: opts.width ? { width: opts.width, height: 844 } : undefined });
  const page = await context.newPage();
  page.on('dialog', (d) => void d.accept());
  await page.goto(s.server.url + '/#/integrations');
  await page.fill('input[name=email]', opts.email ?? s.server.admin.email);
  await page.fill('input[name=password]', opts.password ?? s.server.admin.password);
  await page.click('form button');
  await page.waitForSelector('h3:has-text("Inbound triggers")');
  return page;
}

async function pickProject(page: Page, projectId: string) {
  await page.waitForSelector(`select[name=trigger-project] option[value="${projectId}"]`, { state: 'attached' });
  await page.selectOption('select[name=trigger-project]', projectId);
  await page.waitForSelector('.triggers :is(table.triggers, p:has-text("No triggers"))');
}

/** What the Copy button labelled `label` in the secret notice puts on the clipboard. */
async function copied(page: Page, label: string): Promise<string> {
  const button = page.locator(`.trigger-secret button[aria-label="Copy ${label}"]`);
  await button.click();
  await page.waitForFunction((l) => document.querySelector(`.trigger-secret button[aria-label="Copy ${l}"]`)?.textContent === 'Copied', label);
  return page.evaluate(() => navigator.clipboard.readText());
}

function run(cmd: string, args: string[], cwd: string): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve) => {
    const child = spawn(cmd, args, { cwd, env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/tmp' }, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (out += d));
    child.on('close', (code) => resolve({ code, out }));
  });
}

const openPanel = async (page: Page, name: string, button: string) => page.click(`tr[data-trigger="${name}"] button:has-text("${button}")`);

test('create → the secret shown once; the copied curl script (sh) and TypeScript sender (node) each get 202 and show in the log', async () => {
  const page = await signedIn();
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(e.message));
  await pickProject(page, offline);
  const form = 'form.trigger-form:not(.edit)';
  assert.is(await page.inputValue(`${form} input[name=valuePattern]`), '^[\\w .,:/#@+-]*$', 'the default value pattern is shown');
  await page.fill(`${form} input[name=name]`, 'on push');
  await page.fill(`${form} input[name=skill]`, 'review');
  await page.fill(`${form} textarea[name=args]`, '--ref\n{{payload.ref}}');
  await page.fill(`${form} textarea[name=allowedPaths]`, 'ref');
  await page.click(`${form} button:has-text("Create trigger")`);
  await page.waitForSelector('.trigger-secret');

  const secret = await copied(page, 'Signing secret');
  assert.match(secret, /^[A-Za-z0-9_-]{43}$/);
  const url = await copied(page, 'Trigger URL');
  assert.match(url, new RegExp(`^${s.server.url}/hooks/[A-Za-z0-9_-]{24}$`));
  const script = await copied(page, 'Signed sample call (sh, openssl, curl)');
  const sender = await copied(page, 'TypeScript/Node sender (save as send-trigger.ts; npx tsx send-trigger.ts)');
  assert.ok(script.includes(secret) && sender.includes(secret) && sender.includes(url));
  assert.ok(sender.split('\n').length <= 18, 'the sender is about 15 lines');
  await page.click('.trigger-secret button:has-text("I have copied it")');
  await page.waitForSelector('.trigger-secret', { state: 'detached' });
  assert.not.ok((await page.content()).includes(secret), 'the secret is gone from the page');
  assert.match((await page.textContent('tr[data-trigger="on push"]')) ?? '', /Enabled/);

  // The shell script, as copied, with sh -c: 202, and its delivery id is in the answer.
  const shell = await run('sh', ['-c', script], tmpdir());
  assert.is(shell.code, 0, shell.out);
  assert.match(shell.out, /\nHTTP 202\n$/);
  const shellDelivery = JSON.parse(shell.out.split('\n')[0]).deliveryId as string;

  // The TypeScript sender, as copied, saved to a file and run with node (tsx): 202.
  const dir = mkdtempSync(join(tmpdir(), 'sender-'));
  try {
    writeFileSync(join(dir, 'send-trigger.ts'), sender);
    const node = await run(process.execPath, ['--import', 'tsx', join(dir, 'send-trigger.ts')], ROOT);
    assert.is(node.code, 0, node.out);
    assert.match(node.out, /^202 \{"deliveryId":"[0-9a-f-]{36}","status":"accepted"\}/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }

  // Both in the delivery log; the runner is offline, so each ends failed / runner_offline.
  await openPanel(page, 'on push', 'Deliveries');
  const row = `table.trigger-deliveries tr[data-delivery="${shellDelivery}"]`;
  await page.waitForFunction((sel) => /failed\s*runner_offline/.test(document.querySelector(sel)?.textContent ?? ''), row, { timeout: 20_000 });
  assert.match((await page.textContent(row)) ?? '', /--ref.*example/, 'the rendered args of the sample payload');
  await page.waitForFunction(() => document.querySelectorAll('table.trigger-deliveries tr[data-delivery]').length === 2, null, { timeout: 20_000 });
  // The list's last-delivery column follows by itself.
  await page.waitForFunction(() => /runner_offline/.test(document.querySelector('tr[data-trigger="on push"]')?.textContent ?? ''), null, { timeout: 20_000 });
  assert.equal(errors, []);
  await page.context().close();
});

test('dry run: the sample is accepted with its rendered args but would not start now (the runner is offline, said in words); a bad payload would be refused with every reason; not JSON → said inline, nothing sent', async () => {
  await createTrigger(s.server, offline, skillTrigger({ name: 'dry', args: ['{{payload.ref}}', 'sha={{payload.sha}}'], allowedPaths: ['ref', 'sha'] }));
  const page = await signedIn();
  await pickProject(page, offline);
  await openPanel(page, 'dry', 'Dry run');
  const box = '.trigger-panel textarea[name=payload]';
  assert.equal(JSON.parse(await page.inputValue(box)), { ref: 'example', sha: 'example' }, 'prefilled with a sample of the allowed paths');
  await page.click('form.dry-run button');
  const fail = await page.waitForSelector('.verdict[data-reason=runner_offline]:has-text("Would not start now")');
  assert.match((await fail.textContent()) ?? '', /runner is offline[\s\S]*202[\s\S]*example[\s\S]*sha=example/);

  await page.fill(box, '{"ref": "a;b"}');
  await page.click('form.dry-run button');
  const refused = await page.waitForSelector('.verdict:has-text("Would be refused")');
  const items = await refused.$$eval('ul.reasons li', (lis) => lis.map((li) => li.textContent ?? ''));
  assert.is(items.length, 2, items.join(' | '));
  assert.match(items[0], /args\.0.*payload\.ref does not match the value pattern/);
  assert.match(items[1], /args\.1.*payload\.sha is not in the payload/);

  const asked: string[] = [];
  page.on('request', (r) => void (r.url().includes('/dry-run') && asked.push(r.url())));
  await page.fill(box, '{"ref": ');
  await page.click('form.dry-run button');
  const alert = await page.waitForSelector('form.dry-run [role=alert]');
  assert.match((await alert.textContent()) ?? '', /^Not valid JSON: /);
  assert.is(await page.$('.verdict'), null, 'the old verdict is gone');
  assert.equal(asked, [], 'invalid JSON is never sent');
  await page.context().close();
});

test('field errors from the API are shown beside their input and cleared on success; edit keeps the project', async () => {
  const made = await createTrigger(s.server, offline, skillTrigger({ name: 'to-edit' }));
  const page = await signedIn();
  await pickProject(page, offline);

  // Create with a bad regular expression: the error sits beside the value pattern, nothing is added.
  const form = 'form.trigger-form:not(.edit)';
  await page.fill(`${form} input[name=name]`, 'bad pattern');
  await page.fill(`${form} input[name=skill]`, 'review');
  await page.fill(`${form} input[name=valuePattern]`, '(a)\\1');
  await page.click(`${form} button:has-text("Create trigger")`);
  const beside = await page.waitForSelector(`${form} .field-error[data-field=valuePattern]`);
  assert.match((await beside.textContent()) ?? '', /regular expression/);
  assert.is(await page.$('tr[data-trigger="bad pattern"]'), null);
  await page.fill(`${form} input[name=valuePattern]`, '^[a-z]*$');
  await page.click(`${form} button:has-text("Create trigger")`);
  await page.waitForSelector('.trigger-secret');
  await page.waitForSelector(`${form} .field-error`, { state: 'detached', timeout: 15_000 }); // cleared on success (a render may lag the secret)
  await page.click('.trigger-secret button:has-text("I have copied it")');

  // Edit: a placeholder outside the allowed paths is refused on its line; fixed, it saves.
  await openPanel(page, 'to-edit', 'Edit');
  const edit = 'form.trigger-form.edit';
  await page.fill(`${edit} textarea[name=args]`, '--ref\n{{payload.branch}}');
  await page.click(`${edit} button:has-text("Save trigger")`);
  const argError = await page.waitForSelector(`${edit} .field-error[data-field=args]`);
  assert.match((await argError.textContent()) ?? '', /^line 2: /);
  await page.fill(`${edit} textarea[name=allowedPaths]`, 'ref\nbranch');
  await page.click(`${edit} button:has-text("Save trigger")`);
  await page.waitForSelector(edit, { state: 'detached' });
  await page.waitForFunction(() => /payload\.branch/.test(document.querySelector('tr[data-trigger="to-edit"]')?.textContent ?? ''));
  const saved = await callAs(s.server, `/api/projects/${offline}/triggers/${made.id}`);
  assert.equal([saved.body.projectId, saved.body.args, saved.body.allowedPaths], [offline, ['--ref', '{{payload.branch}}'], ['ref', 'branch']]);
  await page.context().close();
});

test('disable → the hook answers 404; enable → 202 again; rotate → a new secret shown once, the old one still verifies', async () => {
  const made = await createTrigger(s.server, offline, skillTrigger({ name: 'switch' }));
  const page = await signedIn();
  await pickProject(page, offline);
  await openPanel(page, 'switch', 'Disable');
  await page.waitForFunction(() => /Disabled/.test(document.querySelector('tr[data-trigger="switch"]')?.textContent ?? ''));
  const off = await post(made.url, made.secret, { ref: 'main' });
  assert.equal([off.status, off.text], [404, '']);
  await openPanel(page, 'switch', 'Enable');
  await page.waitForFunction(() => /Enabled/.test(document.querySelector('tr[data-trigger="switch"]')?.textContent ?? ''));
  assert.is((await post(made.url, made.secret, { ref: 'main' })).status, 202);

  await openPanel(page, 'switch', 'Rotate secret');
  const notice = await page.waitForSelector('.trigger-secret');
  assert.match((await notice.textContent()) ?? '', /old secret keeps working for 24 h/);
  const fresh = await copied(page, 'Signing secret');
  assert.is.not(fresh, made.secret);
  assert.ok((await copied(page, 'Signed sample call (sh, openssl, curl)')).includes(fresh), 'the snippets use the new secret');
  await page.click('.trigger-secret button:has-text("I have copied it")');
  assert.is((await post(made.url, made.secret, { ref: 'old' })).status, 202, 'the old secret still verifies');
  assert.is((await post(made.url, fresh, { ref: 'new' })).status, 202);
  await page.waitForFunction(() => /old secret works until/.test(document.querySelector('tr[data-trigger="switch"]')?.textContent ?? ''));

  await openPanel(page, 'switch', 'Delete');
  await page.waitForSelector('tr[data-trigger="switch"]', { state: 'detached' });
  assert.is((await post(made.url, fresh, { ref: 'gone' })).status, 404);
  await page.context().close();
});

test('delivery log: refused deliveries with their reasons, 20 a page with Older/Newer, new ones appear while open', async () => {
  const made = await createTrigger(s.server, offline, skillTrigger({ name: 'paged' }));
  for (let i = 0; i < 21; i++) assert.is((await post(made.url, made.secret, '[1]', { delivery: `old-${String(i).padStart(2, '0')}` })).status, 422);
  const page = await signedIn();
  await pickProject(page, offline);
  await openPanel(page, 'paged', 'Deliveries');
  const ids = () => page.$$eval('table.trigger-deliveries tr[data-delivery]', (rows) => rows.map((r) => r.getAttribute('data-delivery')));
  await page.waitForSelector('table.trigger-deliveries');
  assert.is((await ids()).length, 20);
  assert.is((await ids())[0], 'old-20', 'newest first');
  const first = (await page.textContent('tr[data-delivery="old-20"]')) ?? '';
  assert.match(first, /refused/);
  assert.match(first, /invalid_payload/);
  assert.match(first, /not_object|must be a JSON object/);
  await page.click('.trigger-log button:has-text("Older")');
  await page.waitForFunction(() => document.querySelector('table.trigger-deliveries tr[data-delivery]')?.getAttribute('data-delivery') === 'old-00');
  assert.equal(await ids(), ['old-00']);
  assert.is(await page.$('.trigger-log button:has-text("Older")'), null);
  await page.click('.trigger-log button:has-text("Newer")');
  await page.waitForSelector('tr[data-delivery="old-20"]');

  assert.is((await post(made.url, made.secret, { ref: 'main' }, { delivery: 'while-open' })).status, 202);
  await page.waitForSelector('tr[data-delivery="while-open"]', { timeout: 20_000 });
  await page.context().close();
});

test('a delivery that started a run links to it: the Runs page opens that run', async () => {
  const ws = connect(s.server.url, s.runner.token);
  await ws.next('welcome');
  try {
    const made = await createTrigger(s.server, s.projectId, skillTrigger({ name: 'runs' }));
    assert.is((await post(made.url, made.secret, { ref: 'main' }, { delivery: 'starts-a-run' })).status, 202);
    const cmd = await ws.next('command');
    assert.is(cmd.name, 'skill.run');
    ws.send({ type: 'result', requestId: cmd.requestId, ok: true, data: { runId: 'run-from-trigger', state: 'running', projectId: s.projectId } });
    const now = new Date().toISOString();
    const payload = { runId: 'run-from-trigger', project: s.projectId, skill: 'review', args: ['--ref', 'main'], output: 'report', profile: 'cc', runtime: 'claude', createdAt: now, state: 'running', at: now };
    ws.send({ type: 'events', events: [{ id: 'run.run-from-trigger.running', source: `project:${s.projectId}`, kind: 'skill_run.state', ts: now, payload }] });
    await ws.next('ack');
    await waitFor('fired', async () => (await deliveries(s.server, s.projectId, made.id)).find((d) => d.status === 'fired'));

    const page = await signedIn();
    await pickProject(page, s.projectId);
    await openPanel(page, 'runs', 'Deliveries');
    const link = await page.waitForSelector('tr[data-delivery="starts-a-run"] a:has-text("Open run")');
    assert.match((await page.textContent('tr[data-delivery="starts-a-run"]')) ?? '', /fired/);
    await link.click();
    await page.waitForSelector('h2:has-text("Skill runs")');
    assert.match(page.url(), /#\/runs\?run=run-from-trigger$/);
    await page.waitForSelector('tr[data-run="run-from-trigger"] + tr .run-detail', { state: 'attached' });
    assert.is(await page.textContent('tr[data-run="run-from-trigger"] button.secondary'), 'Hide', 'that run is the one opened');
    await page.context().close();
  } finally {
    ws.ws.close();
  }
});

test('only projects where the user is admin are offered', async () => {
  const user = await makeUser(s.server, 'pm');
  for (const [projectId, role] of [[offline, 'admin'], [s.projectId, 'operator']]) {
    const res = await callAs(s.server, `/api/projects/${projectId}/members/${user.id}`, { method: 'PUT', json: { role } });
    assert.is(res.status, 200);
  }
  const page = await signedIn({ email: user.email, password: user.password });
  await page.waitForSelector('select[name=trigger-project]');
  const offered = await page.$$eval('select[name=trigger-project] option', (os) => os.map((o) => (o as HTMLOptionElement).value));
  assert.equal(offered, [offline]);
  await page.context().close();
});

test('390 px wide with triggers, the secret notice and the delivery log open: no sideways scrolling', async () => {
  const name = 'a-trigger-with-a-rather-long-name-to-push-the-table-wide';
  const made = await createTrigger(s.server, offline, skillTrigger({ name }));
  assert.is((await post(made.url, made.secret, { ref: 'a;b' }, { delivery: 'a-rather-long-delivery-id-from-some-ci-system-0123456789abcdef' })).status, 422);
  const page = await signedIn({ width: 390 });
  await pickProject(page, offline);
  const form = 'form.trigger-form:not(.edit)';
  await page.fill(`${form} input[name=name]`, 'phone');
  await page.fill(`${form} input[name=skill]`, 'review');
  await page.click(`${form} button:has-text("Create trigger")`);
  await page.waitForSelector('.trigger-secret');
  await openPanel(page, name, 'Deliveries');
  await page.waitForSelector('table.trigger-deliveries');
  const [scroll, client] = await page.evaluate(() => [document.documentElement.scrollWidth, document.documentElement.clientWidth]);
  assert.ok(scroll <= client, `${scroll} > ${client}`);
  await openPanel(page, name, 'Dry run');
  await page.click('form.dry-run button');
  await page.waitForSelector('.verdict');
  await page.screenshot({ path: '.tmp/triggers-390.png', fullPage: true });
  const [scroll2, client2] = await page.evaluate(() => [document.documentElement.scrollWidth, document.documentElement.clientWidth]);
  assert.ok(scroll2 <= client2, `${scroll2} > ${client2}`);
  await page.context().close();
});

test.run();

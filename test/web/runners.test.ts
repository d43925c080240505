// The admin Runners page in a real browser: add a runner, copy each command from the page and run it
// on a sandboxed "machine" (the real installer, the real runner bundle), see it online, its remedy,
// revoke it, pair it again from its row; a runner older than the bundle the server serves is marked
// "update available", with how to update it in its detail.
// needs: curl
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { Browser } from 'playwright-core';
import { launchBrowser } from '../helpers/browser.ts';
import { startServer } from '../helpers/server.ts';
import type { RunningServer } from '../helpers/server.ts';
import { connect } from '../helpers/wsclient.ts';
import { killDaemons, sandbox, startDaemon, waitUntil } from '../runner/_harness.ts';
import type { Sandbox } from '../runner/_harness.ts';

/** Run one pasted command line with sh on the sandboxed machine. */
function sh(sb: Sandbox, line: string): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve) => {
    const child = spawn('sh', ['-c', line], { cwd: sb.home, env: sb.env, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (out += d));
    child.on('close', (code) => resolve({ code, out }));
  });
}

let server: RunningServer;
let browser: Browser;
test.before(async () => {
  [server, browser] = await Promise.all([startServer({ admin: true }), launchBrowser()]);
});
test.after(async () => {
  await killDaemons();
  await browser?.close();
  await server?.cleanup();
});

async function signedInPage(path: string) {
  const context = await browser.newContext({ permissions: ['clipboard-read', 'clipboard-write'] });
  const page = await context.newPage();
  page.on('dialog', (d) => void d.accept());
  await page.goto(server.url + path);
  await page.fill('input[name=email]', server.admin.email);
  await page.fill('input[name=password]', server.admin.password);
  await page.click('form button');
  await page.waitForSelector('input[name=name]');
  return page;
}

/** Each command block's text as the Copy button puts it on the clipboard. */
async function copiedCommands(page: Awaited<ReturnType<typeof signedInPage>>): Promise<string[]> {
  const blocks = await page.$$('[role=status] .copyblock');
  const out: string[] = [];
  for (const b of blocks) {
    await (await b.$('button'))!.click();
    await page.waitForFunction((el) => el.querySelector('button')?.textContent === 'Copied', b);
    out.push(await page.evaluate(() => navigator.clipboard.readText()));
  }
  return out;
}

test('add a runner → three commands, each in its own block; copied from the page and run on a machine they install, pair and set up the runner', async () => {
  const page = await signedInPage('/#/runners');
  await page.fill('input[name=name]', 'build-box');
  await page.click('form.inline button');
  const notice = await page.waitForSelector('[role=status]');
  const code = /([A-Z2-9]{4}-[A-Z2-9]{4})/.exec((await notice.textContent()) ?? '')![1];
  const commands = await copiedCommands(page);
  assert.equal(commands, [
    `curl -fsSL ${server.url}/install-runner.sh | sh`,
    `~/.local/bin/svc-runner pair --server ${server.url} --code ${code}`,
    '~/.local/bin/svc-runner install-service',
  ]);
  for (const c of commands) assert.not.match(c, /\n/, 'one command per block, never joined');
  assert.match((await page.textContent('tr[data-runner=build-box]')) ?? '', /unpaired/);

  const sb = sandbox();
  try {
    sb.writeConfig({ otlp: { enabled: false } });
    for (const c of commands) {
      const r = await sh(sb, c);
      assert.is(r.code, 0, `${c}\n${r.out}`);
    }
    assert.ok(existsSync(join(sb.home, '.local', 'bin', 'svc-runner')), 'installed');
    assert.ok(existsSync(join(sb.env.XDG_CONFIG_HOME, 'systemd', 'user', 'svc-runner.service')), 'service unit written');
    assert.is(sb.readConfig().server, server.url);
    const daemon = startDaemon(sb);
    await page.reload();
    await page.waitForSelector('tr[data-runner=build-box] .ok', { timeout: 30_000 });
    assert.match((await page.textContent('tr[data-runner=build-box]')) ?? '', /online/);
    await page.screenshot({ path: '.tmp/runners.png' });
    // Its detail: id, capabilities, projects, last events, and the profiles the live runner reports.
    await page.click('tr[data-runner=build-box] button[aria-label="Details of build-box"]');
    const detail = await page.waitForSelector('.runner-detail');
    await page.waitForFunction(() => !document.querySelector('.runner-detail .profiles')?.textContent?.includes('Asking'), null, { timeout: 30_000 });
    const text = (await detail.textContent()) ?? '';
    assert.match(text, new RegExp(sb.readConfig().runnerId));
    assert.match(text, /terminal/, 'capabilities');
    assert.match(text, /none configured/, 'profiles, from runner.describe');
    assert.match(text, /Code host(idle|ok) \(https:\/\/api\.github\.com/, "the code-host client's state, from runner.describe");
    assert.match(text, /runner\./, 'its last events');
    assert.not.match(text, /update available/i, 'the bundle it installed from this server is the one it serves');
    await page.screenshot({ path: '.tmp/runner-detail.png' });
    await daemon.kill();
  } finally {
    await killDaemons();
    sb.cleanup();
  }
  await page.context().close();
});

test('offline → remedy with code shown as code; revoke → revoked with a Pair again button that gives a new code; pairing with it brings the runner back', async () => {
  const made = await (await server.api('/api/runners', { method: 'POST', json: { name: 'old-box' } })).json();
  const pair = await fetch(`${server.url}/runners/pair`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ code: made.code, hostname: 'h', version: '0.1.0', target: 'linux-x64' }) });
  const { token } = await pair.json();
  const c = connect(server.url, token);
  await c.next('welcome');
  c.ws.close();
  await c.closed;
  const page = await signedInPage('/#/runners');
  await page.waitForSelector('tr[data-runner=old-box] .failed');
  const remedy = await page.$('tr[data-runner=old-box] .remedy');
  assert.match((await remedy!.textContent()) ?? '', /svc-runner status/);
  assert.not.match((await remedy!.textContent()) ?? '', /`/, 'no literal backticks');
  assert.ok((await remedy!.$$('code')).length >= 2, 'commands are shown as code');

  await page.click('tr[data-runner=old-box] button:has-text("Revoke")');
  await page.waitForSelector('tr[data-runner=old-box] button:has-text("Pair again")');
  assert.is(await connect(server.url, token).closed, 4401);
  await page.click('tr[data-runner=old-box] button:has-text("Pair again")');
  const notice = await page.waitForSelector('[role=status]:has-text("old-box")');
  const code = /([A-Z2-9]{4}-[A-Z2-9]{4})/.exec((await notice.textContent()) ?? '')![1];
  const again = await fetch(`${server.url}/runners/pair`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ code, hostname: 'h', version: '0.1.0', target: 'linux-x64' }) });
  assert.is(again.status, 200);
  assert.is((await again.json()).runnerId, made.runner.id, 'the same runner');
  await page.reload();
  await page.waitForSelector('tr[data-runner=old-box] button:has-text("Revoke")');
  assert.is(await page.textContent('tr[data-runner=old-box] td:nth-child(2) > span'), 'offline', 'paired again, not connected yet');
  await page.context().close();
});

test('the name is optional; a duplicate name is warned about; a never-paired runner can be removed from the list', async () => {
  await server.api('/api/runners', { method: 'POST', json: { name: 'twin' } });
  const page = await signedInPage('/#/runners');
  await page.fill('input[name=name]', 'TWIN');
  await page.click('form.inline button');
  const note = await page.waitForSelector('[role=note]');
  assert.match((await note.textContent()) ?? '', /also named TWIN/);
  await page.click('form.inline button'); // no name at all
  await page.waitForSelector('[role=status]:has-text("a new runner")');
  assert.is(await page.$('[role=note]'), null, 'the warning is gone with the next success');
  const rows = () => page.$$eval('tbody tr', (trs) => trs.map((t) => t.getAttribute('data-runner')));
  await page.waitForSelector('tr[data-runner=""]'); // the list reloads just after the notice shows
  assert.ok((await rows()).includes(''), 'the unnamed runner is listed');
  await page.click('tr[data-runner="TWIN"] button:has-text("Remove")');
  await page.waitForFunction(() => !document.querySelector('tr[data-runner="TWIN"]'));
  assert.ok(!(await rows()).includes('TWIN'));
  const listed = (await (await server.api('/api/runners')).json()).runners.map((r: { name: string }) => r.name);
  assert.not.ok(listed.includes('TWIN'), 'removed on the server too');
  await page.context().close();
});

test('a runner older than the bundle this server serves: "update available" in its row and detail, with the command that installs the new one', async () => {
  const made = await (await server.api('/api/runners', { method: 'POST', json: { name: 'stale-box' } })).json();
  const pair = await fetch(`${server.url}/runners/pair`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ code: made.code, hostname: 'h', version: '0.0.1', target: 'linux-x64' }) });
  const { token } = await pair.json();
  const c = connect(server.url, token);
  await c.next('welcome');
  c.send({ type: 'hello', version: '0.0.1', target: 'linux-x64', hostname: 'h', capabilities: [] });
  await waitUntil(async () => (await (await server.api(`/api/runners/${made.runner.id}`)).json()).version === '0.0.1', 10_000, 'the hello is stored');
  const served = (await (await server.api('/api/runners')).json()).bundleVersion;
  const page = await signedInPage('/#/runners');
  await page.waitForSelector('tr[data-runner=stale-box] .badge:has-text("update available")');
  await page.click('tr[data-runner=stale-box] button[aria-label="Details of stale-box"]');
  const hint = await page.waitForSelector('.runner-detail .update-hint');
  const text = (await hint.textContent()) ?? '';
  assert.match(text, new RegExp(`serves runner ${served.replace(/\./g, '\\.')}; this one runs 0\\.0\\.1`));
  assert.is((await page.textContent('.runner-detail .update-hint pre'))?.trim(), `curl -fsSL ${server.url}/install-runner.sh | sh`);
  // A runner on the served version has no such mark.
  const current = await (await server.api('/api/runners', { method: 'POST', json: { name: 'fresh-box' } })).json();
  const p2 = await fetch(`${server.url}/runners/pair`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ code: current.code, hostname: 'h2', version: served, target: 'linux-x64' }) });
  const c2 = connect(server.url, (await p2.json()).token);
  await c2.next('welcome');
  c2.send({ type: 'hello', version: served, target: 'linux-x64', hostname: 'h2', capabilities: [] });
  await page.waitForSelector('tr[data-runner=fresh-box] .ok', { timeout: 15_000 }); // online: arrives live
  assert.not.match((await page.textContent('tr[data-runner=fresh-box]')) ?? '', /update available/);
  c.ws.close();
  c2.ws.close();
  await page.context().close();
});

test.run();

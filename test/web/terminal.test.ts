// The admin Terminal page in a real browser: attach to a project's tmux session through the real
// server and the real runner bundle, type into xterm.js, see the output, detach (the session lives on).
// needs: tmux
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { Browser } from 'playwright-core';
import { launchBrowser } from '../helpers/browser.ts';
import { startServer } from '../helpers/server.ts';
import type { RunningServer } from '../helpers/server.ts';
import { killDaemons, waitUntil } from '../runner/_harness.ts';
import type { Daemon, Sandbox } from '../runner/_harness.ts';
import { pairedProject, startWatchingRunner, tmuxServer } from '../terminal/_setup.ts';

const { socket, tmux, kill } = tmuxServer('svc-webterm');

let server: RunningServer;
let browser: Browser;
let sb: Sandbox;
let projectId: string;
let session: string;
let d: Daemon;

test.before(async () => {
  [server, browser] = await Promise.all([startServer({ admin: true }), launchBrowser()]);
  ({ sb, projectId } = await pairedProject(server, 'web-term', 'widgets'));
  session = `svc-${projectId}-orch`;
  tmux('new-session', '-d', '-s', session, '-x', '80', '-y', '24', 'sh');
  d = await startWatchingRunner(sb, projectId, socket);
});
test.after(async () => {
  await killDaemons();
  kill();
  await browser?.close();
  await server?.cleanup();
  sb?.cleanup();
});

test('attach from the Terminal page, type, see the output, detach; the session lives on', async () => {
  const page = await browser.newPage();
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(e.message));
  // xterm.js is its own chunk, fetched only when a terminal is attached.
  const scripts: string[] = [];
  page.on('request', (r) => r.resourceType() === 'script' && scripts.push(new URL(r.url()).pathname));
  await page.goto(server.url + '/#/terminal');
  await page.fill('input[name=email]', server.admin.email);
  await page.fill('input[name=password]', server.admin.password);
  await page.click('form button');
  await page.waitForSelector(`select[name=project] option[value="${projectId}"]`, { state: 'attached' });
  assert.is(await page.inputValue('input[name=session]'), session);
  assert.not.ok(scripts.some((p) => /\/terminal-view-/.test(p)), `xterm.js not loaded before Attach: ${scripts}`);
  assert.is(await page.$('style#xterm-css'), null);
  await page.click('form.terminal-form button:has-text("Attach")');
  await page.waitForSelector('.terminal .xterm');
  assert.ok(scripts.some((p) => /^\/assets\/terminal-view-[A-Z2-7]{8}\.js$/.test(p)), `the terminal chunk is loaded on Attach: ${scripts}`);
  // Its style sheet came with it: xterm's input textarea is hidden by xterm.css.
  assert.is(await page.$eval('.terminal .xterm-helper-textarea', (t) => getComputedStyle(t).opacity), '0');
  await page.waitForFunction(() => document.querySelector('.terminal .xterm') !== null && document.activeElement?.classList.contains('xterm-helper-textarea'));
  await page.keyboard.type('echo from-the-browser-$((6*7))');
  await page.keyboard.press('Enter');
  await page.waitForFunction(() => /from-the-browser-42/.test(document.querySelector('.terminal .xterm-rows')?.textContent ?? ''), null, { timeout: 15_000 }).catch(async (e) => {
    throw new Error(`${e.message}\nscreen: ${await page.textContent('.terminal .xterm-rows')}\ntmux: ${tmux('capture-pane', '-p', '-t', `=${session}:`)}\nstatus: ${await page.textContent('main')}\nerrors: ${errors}`);
  });
  assert.match(tmux('capture-pane', '-p', '-t', `=${session}:`), /from-the-browser-42/);

  await page.click('form.terminal-form button:has-text("Detach")');
  await page.waitForSelector('[role=status]', { timeout: 10_000 }).catch((e) => {
    throw new Error(`${e.message}\nerrors: ${errors.join('; ')}`);
  });
  assert.match((await page.textContent('[role=status]')) ?? '', /keeps running/);
  await waitUntil(() => tmux('list-clients') === '', 5000, 'the control client detached');
  assert.ok(tmux('list-sessions', '-F', '#{session_name}').split('\n').includes(session));
  assert.equal(errors, []);
});

test('a runner with terminal.attach disabled: the page does not offer Attach', async () => {
  await d.kill('SIGTERM');
  sb.writeConfig({ ...sb.readConfig(), disabledCommands: ['terminal.attach'] });
  d = await startWatchingRunner(sb, projectId, socket);
  await waitUntil(async () => (await (await server.api('/api/runners')).json()).runners[0].capabilities.includes('terminal') === false, 10_000, 'the capability gone');
  const page = await browser.newPage();
  await page.goto(server.url + '/#/terminal');
  await page.fill('input[name=email]', server.admin.email);
  await page.fill('input[name=password]', server.admin.password);
  await page.click('form button');
  await page.waitForSelector('[role=note]');
  assert.match((await page.textContent('[role=note]')) ?? '', /turned off/);
  assert.ok(await page.isDisabled('form.terminal-form button:has-text("Attach")'));
});

test.run();

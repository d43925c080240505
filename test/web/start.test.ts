// Getting started, Projects and Audit in a real browser against the real server (issue 16): an empty
// instance lands on Getting started; the pairing code's commands, run on a sandboxed machine with the
// real runner bundle, pair it — but with no agent CLI on that machine "Pair a runner" is not ticked and
// both Getting started and Runners say "no agent runtime" with the remedy (issue 34); a signed-in fake
// `claude`, detected and written, ticks it; Check reads the repository on that machine
// (project.inspect) and the project is created, ticking its step; members and a webhook tick the rest.
// Then a viewer's restricted view, and the audit log after all of that.
// needs: git
import { execFileSync, spawn } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { Browser, Page } from 'playwright-core';
import { launchBrowser } from '../helpers/browser.ts';
import { startServer } from '../helpers/server.ts';
import type { RunningServer } from '../helpers/server.ts';
import { makeUser } from '../helpers/users.ts';
import type { TestUser } from '../helpers/users.ts';
import { killDaemons, runCli, sandbox, startDaemon, waitUntil } from '../runner/_harness.ts';
import type { Sandbox } from '../runner/_harness.ts';

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
let sb: Sandbox;
let repoPath = '';
let viewer: TestUser;
const errors: string[] = [];

test.before(async () => {
  // A key for the webhook's secret (PostgreSQL has no generated key file).
  [server, browser] = await Promise.all([startServer({ admin: true, env: { APP_ENCRYPTION_KEY: Buffer.alloc(32, 5).toString('base64') } }), launchBrowser()]);
  sb = sandbox();
  sb.writeConfig({ otlp: { enabled: false } });
  repoPath = join(sb.home, 'src', 'widget');
  mkdirSync(repoPath, { recursive: true });
  const git = (...args: string[]) => execFileSync('git', ['-C', repoPath, ...args], { env: { ...process.env, ...sb.env, GIT_AUTHOR_NAME: 't', GIT_AUTHOR_EMAIL: 't@example.test', GIT_COMMITTER_NAME: 't', GIT_COMMITTER_EMAIL: 't@example.test' } });
  git('init', '-q', '-b', 'main');
  git('remote', 'add', 'origin', 'https://github.example/acme/widget.git');
  git('commit', '-q', '--allow-empty', '-m', 'first commit');
});
test.after(async () => {
  await killDaemons();
  sb?.cleanup();
  await browser?.close();
  await server?.cleanup();
});

/**
 * A signed-in page that records every console error and uncaught exception (the test fails on any).
 * Chromium also logs the API's expected refusals (the 401 before sign-in, a 400 with field errors, a
 * runner's 502 answer) as "Failed to load resource"; those are the answers under test, not errors.
 */
async function signedIn(path: string, who: { email: string; password: string } = server.admin, width = 1280): Promise<Page> {
  const context = await browser.newContext({ viewport: { width, height: 900 } });
  const page = await context.newPage();
  page.on('console', (m) => m.type() === 'error' && !/Failed to load resource: the server responded with a status of (40[01]|502)/.test(m.text()) && errors.push(`${path}: ${m.text()}`));
  page.on('pageerror', (e) => errors.push(`${path}: ${e.message}`));
  await page.goto(server.url + path);
  await page.fill('input[name=email]', who.email);
  await page.fill('input[name=password]', who.password);
  await page.click('form button');
  await page.waitForSelector('main h2');
  return page;
}

const stepDone = (page: Page, id: string) => page.getAttribute(`li[data-step=${id}]`, 'data-done');

test('an empty instance lands on Getting started; a real runner paired from its commands with no agent CLI does not tick step 1 (amber "no agent runtime" with the remedy, here and on Runners); a signed-in claude does', async () => {
  const page = await signedIn('/');
  await page.waitForSelector('main h2:has-text("Getting started")');
  assert.is(await page.getAttribute('nav a[href="#/start"]', 'aria-current'), 'page');
  for (const id of ['runner', 'project', 'members', 'connect']) assert.is(await stepDone(page, id), 'false', id);
  await page.fill('li[data-step=runner] input[name=name]', 'agent-box');
  await page.click('li[data-step=runner] button:has-text("Make a pairing code")');
  await page.waitForSelector('li[data-step=runner] .pairing');
  const commands = await page.$$eval('li[data-step=runner] .pairing pre.copytext', (els) => els.map((e) => e.textContent ?? ''));
  assert.is(commands.length, 3);
  assert.match(commands[1], /svc-runner pair --server \S+ --code [A-Z2-9]{4}-[A-Z2-9]{4}$/);
  for (const c of commands.slice(0, 2)) {
    const r = await sh(sb, c);
    assert.is(r.code, 0, `${c}\n${r.out}`);
  }
  const bare = startDaemon(sb, { SVC_EVENTS_POLL_MS: '300' });
  // Paired and online, but nothing can run there: not ticked, and the step says why and what to do.
  await page.waitForSelector('li[data-step=runner] .badge.warn:has-text("no agent runtime")', { timeout: 30_000 });
  assert.is(await stepDone(page, 'runner'), 'false');
  assert.match((await page.textContent('li[data-step=runner]')) ?? '', /agent-box[\s\S]*svc-runner profiles --detect --write/);
  assert.not.match((await page.textContent('main')) ?? '', /All set/);
  await page.goto(`${server.url}/#/runners`);
  const row = await page.waitForSelector('tr[data-runner=agent-box] .agent-runtime[data-runtime=none]', { timeout: 30_000 });
  assert.match((await row.textContent()) ?? '', /no agent runtime[\s\S]*svc-runner profiles --detect --write/);
  assert.match((await page.textContent('tr[data-runner=agent-box]')) ?? '', /online/);
  await page.screenshot({ path: '.tmp/runners-no-runtime.png' });
  // The remedy on the machine: a signed-in agent CLI, detected and written, then a restart.
  sb.fakeBin('claude', 'echo "2.0.14 (Claude Code)"');
  mkdirSync(join(sb.home, '.claude'), { recursive: true });
  writeFileSync(join(sb.home, '.claude', '.credentials.json'), '{}');
  assert.is((await runCli(sb, ['profiles', '--detect', '--write'])).status, 0);
  await bare.kill();
  startDaemon(sb, { SVC_EVENTS_POLL_MS: '300' });
  await page.goto(`${server.url}/#/start`);
  await page.waitForSelector('li[data-step=runner][data-done=true]', { timeout: 30_000 });
  assert.match((await page.textContent('li[data-step=runner]')) ?? '', /agent-box/);
  await page.context().close();
});

test('step 2: Check reads the repository on the runner (project.inspect), a bad path shows its error beside the field, Create makes the project', async () => {
  const page = await signedIn('/#/start');
  const step = 'li[data-step=project]';
  await page.waitForSelector(`${step} form.project-form`);
  // Not a repository: the runner's answer is shown beside the root path.
  await page.fill(`${step} input[name=rootPath]`, sb.home);
  await page.click(`${step} button:has-text("Check")`);
  const err = await page.waitForSelector(`${step} .field-error[data-field=rootPath]`, { timeout: 60_000 });
  assert.match((await err.textContent()) ?? '', /git/);
  await page.fill(`${step} input[name=rootPath]`, repoPath);
  await page.click(`${step} button:has-text("Check")`);
  const found = await page.waitForSelector(`${step} .inspected`, { timeout: 60_000 });
  assert.match((await found.textContent()) ?? '', /first commit/);
  assert.is(await page.inputValue(`${step} input[name=repo]`), 'acme/widget', 'the repository is read from the remote');
  // The API's rules: a bad name and a bad budget come back beside their fields.
  await page.fill(`${step} input[name=repo]`, 'not a repo');
  await page.click(`${step} button:has-text("Create project")`);
  await page.waitForSelector(`${step} .field-error[data-field=name]`);
  assert.match((await page.textContent(`${step} .field-error[data-field=repo]`)) ?? '', /owner\/name/);
  await page.fill(`${step} input[name=name]`, 'Widget');
  await page.fill(`${step} input[name=repo]`, 'acme/widget');
  await page.click(`${step} button:has-text("Create project")`);
  await page.waitForSelector(`${step}[data-done=true]`, { timeout: 30_000 }).catch(async (e) => {
    await page.screenshot({ path: '.tmp/start-fail.png', fullPage: true });
    throw new Error(`${e.message}\n${await page.textContent('main')}`);
  });
  const [project] = (await (await server.api('/api/projects')).json()).projects;
  assert.is(project.name, 'Widget');
  assert.is(project.rootPath, repoPath);
  await page.context().close();
});

test('steps 3 and 4 tick from API data: a member on the project, a webhook; then every step is done', async () => {
  viewer = await makeUser(server, 'viewer');
  const [project] = (await (await server.api('/api/projects')).json()).projects;
  const page = await signedIn(`/#/projects?project=${project.id}`);
  await page.waitForSelector('section.members form.add-member');
  await page.fill('section.members input[name=email]', 'nobody@example.test');
  await page.click('section.members button:has-text("Add member")');
  assert.match((await (await page.waitForSelector('section.members .field-error[data-field=email]')).textContent()) ?? '', /no active user/);
  await page.fill('section.members input[name=email]', viewer.email);
  await page.selectOption('section.members select[name=role]', 'viewer');
  await page.click('section.members button:has-text("Add member")');
  await page.waitForSelector(`tr[data-member="${viewer.email}"]`);
  assert.is((await server.api('/api/webhooks', { method: 'POST', json: { url: 'https://hooks.example/start', events: ['pr.merged'] } })).status, 201);
  await page.goto(`${server.url}/#/start`);
  await page.waitForSelector('li[data-step=connect][data-done=true]');
  for (const id of ['runner', 'project', 'members', 'connect']) assert.is(await stepDone(page, id), 'true', id);
  assert.match((await page.textContent('main')) ?? '', /All set/);
  await page.context().close();
});

test("Fleet: the orchestrator's live state from the runner, a slot from what its agent emitted (checkpoint, PR), commands sent through the API", async () => {
  const [project] = (await (await server.api('/api/projects')).json()).projects;
  const emit = async (...args: string[]) => {
    const r = await runCli(sb, ['emit', ...args, '--project-root', repoPath]);
    assert.is(r.status, 0, r.stdout + r.stderr);
  };
  await emit('slot.checkpoint', '--slot', '1', '--issue', '7', '--checkpoint', 'pr_open', '--summary', 'ready for review', '--pr', '34', '--url', 'https://github.example/acme/widget/pull/34');
  await waitUntil(async () => (await (await server.api(`/api/projects/${project.id}/fleet`)).json()).slots.length === 1, 30_000, 'the emitted event reaches the server');
  const page = await signedIn('/#/fleet');
  await page.waitForSelector('main h2:text-is("Fleet")');
  const orch = await page.waitForSelector('section.orchestrator[data-state=absent]', { timeout: 30_000 });
  assert.match((await orch.textContent()) ?? '', /Not running\. Next round starts the orchestrator/);
  const slot = await page.waitForSelector('section.slot[data-slot="1"]');
  const text = (await slot.textContent()) ?? '';
  assert.match(text, /#7/);
  assert.match(text, /pr_open: ready for review/);
  assert.match(text, /#34/);
  assert.is(await page.getAttribute('section.slot[data-slot="1"] a:has-text("#34")', 'href'), 'https://github.example/acme/widget/pull/34');
  // Request changes needs a comment (the API's rule, shown in the dialog); then the command goes to the runner.
  await page.click('section.slot[data-slot="1"] button:has-text("Request changes")');
  await page.waitForSelector('dialog[open] textarea[name=text]');
  await page.fill('dialog[open] textarea[name=text]', 'Please add a test.');
  await page.click('dialog[open] button:has-text("Send")');
  // The decision is the signal file the orchestrator reads (.svc/pr/<n>.json in the project root).
  await page.waitForSelector('main [role=status]:has-text("Changes requested on #34")', { timeout: 60_000 });
  const signal = JSON.parse(readFileSync(join(repoPath, '.svc', 'pr', '34.json'), 'utf8'));
  assert.equal([signal.decision, signal.comment], ['request_changes', 'Please add a test.']);
  assert.is(await page.$('dialog[open]'), null, 'the dialog closed');
  // Next round: sent as orchestrator.start {next: true}; with its agent CLI gone the runner says why.
  rmSync(join(sb.bin, 'claude'));
  await page.click('section.orchestrator button:has-text("Next round")');
  await page.waitForFunction(() => /profile|agent|runtime/i.test(document.querySelector('main [role=alert]')?.textContent ?? ''), null, { timeout: 60_000 });
  await page.context().close();
});

test("a viewer's restricted view: no admin pages in the navigation, the project without a button, admin pages refused", async () => {
  const page = await signedIn('/', viewer, 360);
  await page.waitForSelector('main h2:has-text("Projects")');
  const links = await page.$$eval('nav a', (as) => as.map((a) => a.getAttribute('href')));
  for (const admin of ['#/start', '#/runners', '#/integrations', '#/audit', '#/terminal']) assert.not.ok(links.includes(admin), admin);
  assert.ok(links.includes('#/projects') && links.includes('#/settings'));
  assert.is(await page.$('button:has-text("New project")'), null);
  await page.click('a:has-text("Widget")');
  await page.waitForSelector('section.members');
  await page.waitForSelector(`tr[data-member="${viewer.email}"]`);
  const buttons = await page.$$eval('main button', (bs) => bs.map((b) => b.textContent));
  assert.equal(buttons, [], 'a viewer sees no button it cannot use');
  assert.is(await page.$('main select, main input'), null, 'nor a field it cannot save');
  const [scroll, client] = await page.evaluate(() => [document.documentElement.scrollWidth, document.documentElement.clientWidth]);
  assert.ok(scroll <= client, `no sideways scrolling at 360 px (${scroll} > ${client})`);
  await page.goto(`${server.url}/#/fleet`);
  await page.waitForSelector('section.slot[data-slot="1"]', { timeout: 30_000 });
  await page.waitForSelector('section.orchestrator[data-state=absent]', { timeout: 30_000 });
  // Record (a pull request's record, GET …/pulls/:number/record) is for viewers too: it changes nothing.
  const actions = (await page.$$eval('main button', (bs) => bs.map((b) => b.textContent))).filter((t) => t !== 'Record');
  assert.equal(actions, [], 'no Next round, Stop, Approve… for a viewer');
  assert.match((await page.textContent('section.orchestrator')) ?? '', /an operator can do this/);
  await page.goto(`${server.url}/#/audit`);
  await page.waitForSelector('[role=alert]:has-text("for instance admins")');
  await page.context().close();
});

test('the audit page after those actions: verification state, records of each action, filters and field errors', async () => {
  const page = await signedIn('/#/audit');
  await page.waitForSelector('.verification');
  // The banner and the records load separately: wait for the records before reading them.
  const expected = ['runner.create', 'runner.pair', 'project.create', 'project.member_set', 'webhook.create'];
  await page
    .waitForFunction((want) => {
      const seen = new Set([...document.querySelectorAll('table.audit tr[data-action]')].map((t) => t.getAttribute('data-action')));
      return want.every((a) => seen.has(a));
    }, expected, { timeout: 30_000 })
    .catch(() => {});
  const rows = await page.$$eval('table.audit tr[data-action]', (trs) => trs.map((t) => t.getAttribute('data-action')));
  for (const action of expected) assert.ok(rows.includes(action), `${action} in ${rows.join(', ')}`);
  // Verify now: the chain verifies, and the banner says so with when it ran (a run newer than the one
  // shown before the click: the check at start has already left a verified banner).
  const before = await page.getAttribute('.verification', 'data-finished');
  await page.click('.verification button:has-text("Verify now")');
  await page.waitForFunction((b) => {
    const v = document.querySelector('.verification[data-verified=ok]');
    return v !== null && v.getAttribute('data-finished') !== b && !v.querySelector('button[disabled]');
  }, before, { timeout: 30_000 });
  assert.match((await page.textContent('.verification')) ?? '', /Chain verified through record #\d+: \d+ records? /);
  // Filter by action through the form: only those records remain, and the filter is in the address.
  await page.fill('input[name=action]', 'project.create');
  await page.click('form.audit-filters button:has-text("Filter")');
  await page.waitForFunction(() => location.hash.includes('action=project.create'));
  // The unfiltered table also holds a project.create row, and the table is empty while the filtered
  // list loads: wait for a non-empty table of project.create rows only (every() of none is true).
  await page.waitForFunction(() => {
    const rows = [...document.querySelectorAll('table.audit tr[data-action]')];
    return rows.length > 0 && rows.every((t) => t.getAttribute('data-action') === 'project.create');
  });
  assert.is((await page.$$('table.audit tr[data-action]')).length, 1);
  // The API's rules: a malformed action name is named beside its field.
  await page.fill('input[name=action]', 'Not An Action');
  await page.click('form.audit-filters button:has-text("Filter")');
  assert.match((await (await page.waitForSelector('.field-error[data-field=action]')).textContent()) ?? '', /action name/);
  await page.context().close();
});

test('no console errors on any page visited', () => {
  assert.equal(errors, []);
});

test.run();

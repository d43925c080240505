// The Fleet page's issue queue and its Approve panel in a real browser (issue #36 item 3), against the
// real server, the real runner bundle (paired, its code host pointed at the fake GitHub,
// test/fakes/github.ts, with a runner token) and the fake GitHub's state:
//   the queue shows the open issues the runner read (number, title linked, labels, the slot working
//   one, "refreshed … ago"); Refresh sends issues.refresh and an issue opened on GitHub since appears;
//   New issue creates the issue on GitHub (labels split at commas) and it appears, a bad label is shown
//   beside its field and creates nothing; a viewer sees the queue, follows a runner poll's change live,
//   and has no Refresh / New issue / Approve;
//   Approve first shows what pr.inspect read (files, checks, reviews, mergeability) and the PR's cost,
//   and only the confirm writes the approval (the signal file the orchestrator reads); a PR GitHub does
//   not know, or a runner offline, is a warning, and approving stays possible (offline, its refusal is
//   shown in the dialog).
// The slot, its PR and the LLM requests of its session are spooled through the bundle's spool-append in
// the shapes the runner's orchestrator and collectors send.
// needs: git
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { Browser, Page } from 'playwright-core';
import { githubFake } from '../fakes/github.ts';
import type { GitHubFake } from '../fakes/github.ts';
import { launchBrowser } from '../helpers/browser.ts';
import { startServer } from '../helpers/server.ts';
import type { RunningServer } from '../helpers/server.ts';
import { callAs, makeUser } from '../helpers/users.ts';
import type { TestUser } from '../helpers/users.ts';
import { killDaemons, runCli, sandbox, startDaemon, waitUntil } from '../runner/_harness.ts';
import type { Daemon, Sandbox } from '../runner/_harness.ts';

const REPO = 'acme/widget';
let server: RunningServer;
let browser: Browser;
let gh: GitHubFake;
let sb: Sandbox;
let daemon: Daemon;
let root = '';
let projectId = '';
let operator: TestUser;
let viewer: TestUser;
/** The pull request slot 1 works on (on the fake GitHub) and one slot 2 names that GitHub does not know. */
let pr = 0;
const MISSING_PR = 977;
const errors: string[] = [];

/** Spools one event with the bundle's spool-append, as the runner's own code would. */
async function spool(kind: string, source: string, payload: Record<string, unknown>) {
  const r = await runCli(sb, ['spool-append', kind, '--source', source, '--payload', JSON.stringify(payload)]);
  assert.is(r.status, 0, r.stderr);
}
const fleetEvent = (kind: string, slot: string | null, issue: number | null, data: Record<string, unknown>) =>
  spool(kind, `project:${projectId}`, { project: projectId, type: kind, ...(slot ? { slot } : {}), ...(issue ? { issue } : {}), data, origin: 'runner' });

test.before(async () => {
  [server, browser, gh] = await Promise.all([startServer({ admin: true }), launchBrowser(), githubFake()]);
  const repo = gh.repo(REPO);
  repo.issues.push(
    { number: 1, title: 'Fix the parser', body: '', labels: ['bug'], state: 'open' },
    { number: 2, title: 'Add a dark mode', body: '', labels: ['feature', 'ui'], state: 'open' },
  );
  repo.next = 3;
  const files = Array.from({ length: 14 }, (_, i) => ({ filename: `src/parser/part${i}.ts`, status: i === 0 ? 'added' : 'modified', additions: i + 1, deletions: i }));
  const p = gh.addPull(REPO, {
    title: 'Fix the parser',
    head: 'svc/1-fix-parser',
    files,
    reviews: [{ id: 1, user: { login: 'carol' }, state: 'COMMENTED', submitted_at: '2026-11-27T10:00:00Z' }],
  });
  pr = p.number;
  repo.checkRuns[p.sha] = [
    { name: 'unit tests', status: 'completed', conclusion: 'success' },
    { name: 'lint', status: 'completed', conclusion: 'failure' },
  ];

  sb = sandbox();
  root = join(sb.home, 'src', 'widget');
  mkdirSync(root, { recursive: true });
  execFileSync('git', ['init', '-q', '-b', 'main', root]);
  const made = await callAs(server, '/api/runners', { method: 'POST', json: { name: 'widget-box' } });
  assert.is(made.status, 201, JSON.stringify(made.body));
  const paired = await runCli(sb, ['pair', '--server', server.url, '--code', made.body.code, '--no-detect']);
  assert.is(paired.status, 0, paired.stderr);
  sb.writeConfig({ ...sb.readConfig(), codehost: { apiUrl: gh.url } });
  const project = await callAs(server, '/api/projects', { method: 'POST', json: { name: 'Widget', repo: REPO, runnerId: made.body.runner.id, rootPath: root } });
  assert.is(project.status, 201, JSON.stringify(project.body));
  projectId = project.body.id;
  [operator, viewer] = await Promise.all([makeUser(server, 'op'), makeUser(server, 'viewer')]);
  for (const [u, role] of [[operator, 'operator'], [viewer, 'viewer']] as const) {
    const m = await callAs(server, `/api/projects/${projectId}/members`, { method: 'POST', json: { email: u.email, role } });
    assert.is(m.status, 201, JSON.stringify(m.body));
  }

  // Slot 1 works on issue 1 and opened the PR; slot 2 names a PR GitHub does not have. Its session's LLM
  // requests are on the PR's branch, which the collector's pr.opened names.
  const branch = p.head;
  const at = new Date(Date.now() - 600_000).toISOString();
  await fleetEvent('slot.dispatched', '1', 1, { title: 'Fix the parser', branch });
  await fleetEvent('slot.checkpoint', '1', 1, { checkpoint: 'pr_open', summary: 'waiting for review', pr: { number: pr, url: `https://github.example/${REPO}/pull/${pr}` } });
  await fleetEvent('pr.opened', null, null, { pr: { number: pr, url: `https://github.example/${REPO}/pull/${pr}` }, title: p.title, branch });
  await fleetEvent('slot.dispatched', '2', 2, { title: 'Add a dark mode', branch: 'svc/2-dark-mode' });
  await fleetEvent('slot.checkpoint', '2', 2, { checkpoint: 'pr_open', pr: { number: MISSING_PR, url: `https://github.example/${REPO}/pull/${MISSING_PR}` } });
  await spool('session.meta', 'sessions', { runtime: 'claude', sessionId: 'sess-w1', source: 'transcript', models: ['claude-opus-4-6'], firstAt: at, lastAt: at, project: projectId, slot: '1', issue: '1', branch });
  for (const n of [1, 2])
    await spool('llm.request', 'sessions', {
      ...{ key: `claude:msg_w1_${n}:req_w1_${n}`, runtime: 'claude', source: 'transcript', sessionId: 'sess-w1', requestId: `req_w1_${n}`, messageId: `msg_w1_${n}` },
      ...{ model: 'claude-opus-4-6', at, inputTokens: 100_000 * n, outputTokens: 10_000, cacheWrite5mTokens: 0, cacheWrite1hTokens: 0, cacheReadTokens: 0 },
    });

  // Timed polls far apart: what the queue shows after the first one comes from the buttons under test.
  daemon = startDaemon(sb, { GH_TOKEN: gh.token, SVC_QUEUE_POLL_MS: '3600000', SVC_PR_POLL_MS: '3600000', SVC_EVENTS_POLL_MS: '200' });
  await waitUntil(async () => (await callAs(server, `/api/projects/${projectId}/fleet`)).body?.slots?.length === 2, 30_000, () => `the spooled slots on the server\n${daemon.output()}`);
});
test.after(async () => {
  await killDaemons();
  sb?.cleanup();
  await browser?.close();
  await gh?.close();
  await server?.cleanup();
});

/**
 * A signed-in page on the project's fleet that records console errors and uncaught exceptions (the file
 * fails on any). Chromium also logs the API's expected refusals (the 401 before sign-in, a runner's 502
 * answer for the PR GitHub does not know, the 503 of a runner offline, a field error's 400) as "Failed to load resource"; those are
 * answers under test.
 */
async function fleetAs(who: { email: string; password: string }): Promise<Page> {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  const page = await context.newPage();
  page.on('console', (m) => m.type() === 'error' && !/Failed to load resource: the server responded with a status of (40[01]|50[23])/.test(m.text()) && errors.push(`${who.email}: ${m.text()}`));
  page.on('pageerror', (e) => errors.push(`${who.email}: ${e.message}`));
  await page.goto(`${server.url}/#/fleet/${projectId}`);
  await page.fill('input[name=email]', who.email);
  await page.fill('input[name=password]', who.password);
  await page.click('form button');
  await page.waitForSelector('section.queue');
  return page;
}
/** A queue row's cells, " | " between them, match `re`. */
async function rowMatches(page: Page, n: number, re: RegExp) {
  const text = await rowText(page, n);
  assert.match(text, re, `row ${n}: ${text}`);
}
/** A queue row's cells, " | " between them. */
const rowText = (page: Page, n: number) =>
  page.$$eval(`section.queue tr[data-issue="${n}"] td`, (tds) => tds.map((td) => (td.textContent ?? '').replace(/\s+/g, ' ').trim()).join(' | '));
const issuesReads = () => gh.requests.filter((r) => r.method === 'GET' && r.path.startsWith(`/repos/${REPO}/issues?`)).length;

test('the queue: the open issues the runner read, titles linked, labels, the slot on each, when it was read; Refresh reads GitHub now and a new issue appears', async () => {
  const page = await fleetAs(operator);
  await page.waitForSelector('section.queue tr[data-issue="2"]', { timeout: 30_000 });
  assert.is(await page.getAttribute('section.queue tr[data-issue="1"] a', 'href'), `https://github.example/${REPO}/issues/1`);
  await rowMatches(page, 1, /^1 \| Fix the parser \| bug \| slot 1 \| (just now|\d+ min ago)$/);
  await rowMatches(page, 2, /^2 \| Add a dark mode \| featureui \| slot 2 \| /);
  assert.equal(await page.$$eval('section.queue tr[data-issue="2"] .label', (els) => els.map((e) => e.textContent)), ['feature', 'ui']);
  assert.match((await page.textContent('section.queue .refreshed')) ?? '', /^refreshed (just now|\d+ min ago)$/);

  // Opened on GitHub since the runner's last poll (the next timed one is an hour away): Refresh brings it.
  gh.repo(REPO).issues.push({ number: gh.repo(REPO).next++, title: 'Flaky export test', body: '', labels: [], state: 'open' });
  const added = gh.repo(REPO).next - 1;
  assert.is(await page.$(`section.queue tr[data-issue="${added}"]`), null);
  const before = issuesReads();
  await page.click('section.queue button:has-text("Refresh")');
  const status = await page.waitForSelector('section.queue p[role=status]', { timeout: 30_000 });
  assert.match((await status.textContent()) ?? '', /^Refreshed: 3 open issues on GitHub\.$/);
  assert.ok(issuesReads() > before, 'the runner read the issues again');
  await page.waitForSelector(`section.queue tr[data-issue="${added}"]`, { timeout: 30_000 });
  await rowMatches(page, added, new RegExp(`^${added} \\| Flaky export test \\|  \\| none \\| (just now|\\d+ min ago)$`));
  assert.is(await page.textContent('section.queue button:has-text("Refresh")'), 'Refresh');
  await page.context().close();
});

test('New issue: a bad label is named beside its field and creates nothing; title, body and labels create the issue on GitHub, its link is shown and it joins the queue', async () => {
  const page = await fleetAs(operator);
  await page.click('section.queue button:has-text("New issue")');
  await page.fill('form.new-issue input[name=title]', 'Export to CSV');
  await page.fill('form.new-issue textarea[name=body]', 'The report needs a CSV download.');
  await page.fill('form.new-issue input[name=labels]', `feature, ${'x'.repeat(51)}`);
  const count = gh.repo(REPO).issues.length;
  await page.click('form.new-issue button:has-text("Create issue")');
  const err = await page.waitForSelector('form.new-issue .field-error[data-field=labels]', { timeout: 30_000 });
  assert.match((await err.textContent()) ?? '', /line 2: .*50/);
  assert.is(gh.repo(REPO).issues.length, count, 'nothing created');

  await page.fill('form.new-issue input[name=labels]', ' feature ,ui,, ');
  await page.click('form.new-issue button:has-text("Create issue")');
  const created = await page.waitForSelector('section.queue p.created', { timeout: 30_000 });
  const issue = gh.repo(REPO).issues.find((i) => i.title === 'Export to CSV');
  assert.ok(issue, 'the issue is on GitHub');
  assert.equal([issue!.body, issue!.labels], ['The report needs a CSV download.', ['feature', 'ui']]);
  assert.is((await created.textContent())?.trim(), `Created #${issue!.number}.`);
  assert.is(await created.$eval('a', (a) => a.getAttribute('href')), `https://github.example/${REPO}/issues/${issue!.number}`);
  assert.is(await page.$('form.new-issue'), null, 'the form closed');
  await page.waitForSelector(`section.queue tr[data-issue="${issue!.number}"]`, { timeout: 30_000 });
  await page.screenshot({ path: '.tmp/fleet-queue.png', fullPage: true });
  await rowMatches(page, issue!.number, new RegExp(`^${issue!.number} \\| Export to CSV \\| featureui \\| none \\| (just now|\\d+ min ago)$`));
  await page.context().close();
});

test('a viewer sees the queue, follows it live (a runner poll that changed it shows without a reload), and has no Refresh, New issue or Approve', async () => {
  const page = await fleetAs(viewer);
  await page.waitForSelector('section.queue tr[data-issue="1"]', { timeout: 30_000 });
  await rowMatches(page, 1, /Fix the parser/);
  // The runner's collector reporting a changed queue (its codehost.queue event): the open page re-reads.
  const issue = (number: number, title: string, labels: string[]) => ({ number, title, url: `https://github.example/${REPO}/issues/${number}`, labels });
  const issues = [issue(42, 'Seen by the poll', ['chore']), issue(2, 'Add a dark mode', ['feature', 'ui']), issue(1, 'Fix the parser', ['bug', 'p1'])];
  await spool('codehost.queue', `project:${projectId}`, { project: projectId, repo: REPO, count: issues.length, issues, truncated: false });
  await page.waitForSelector('section.queue tr[data-issue="42"]', { timeout: 30_000 });
  await rowMatches(page, 42, /^42 \| Seen by the poll \| chore \| none \| /);
  await rowMatches(page, 1, /^1 \| Fix the parser \| bugp1 \| slot 1 \| /);
  assert.equal(await page.$$eval('section.queue tr[data-issue]', (trs) => trs.map((tr) => tr.getAttribute('data-issue'))), ['1', '2', '42'], 'the issues no poll names are gone');
  await page.waitForSelector('section.slot[data-slot="1"]');
  for (const label of ['Refresh', 'New issue', 'Approve']) assert.is(await page.$(`main button:has-text("${label}")`), null, label);
  // And the server refuses the commands to a viewer (the page only hides what would fail).
  const refused = await callAs(server, `/api/projects/${projectId}/commands`, { method: 'POST', token: viewer.token, json: { name: 'issues.refresh', args: {} } });
  assert.is(refused.status, 403);
  await page.context().close();
});

test('Approve first shows the PR as GitHub has it (files, checks, reviews, mergeable) and its cost; only the confirm writes the approval', async () => {
  const signal = join(root, '.svc', 'pr', `${pr}.json`);
  const page = await fleetAs(operator);
  await page.click('section.slot[data-slot="1"] button:has-text("Approve")');
  const panel = await page.waitForSelector('dialog .approve-panel[data-inspected=ok]', { timeout: 30_000 });
  const text = ((await panel.textContent()) ?? '').replace(/\s+/g, ' ');
  assert.match(text, new RegExp(`#${pr} Fix the parser svc/1-fix-parser → main`));
  assert.match(text, /14 files changed, \+105 −91/);
  assert.equal(await panel.$$eval('.files li', (els) => els.length), 10, 'the first ten files');
  assert.match(text, /src\/parser\/part0\.ts \+1 −0 added/);
  assert.match(text, /and 4 more/);
  assert.match(text, /failed 2 checks: 1 passed, 1 failed, 0 pending \(failed: lint\)/);
  assert.equal(await panel.$$eval('.checks li', (els) => els.map((e) => (e.textContent ?? '').replace(/\s+/g, ' ').trim())), ['unit tests passed', 'lint failed']);
  assert.equal(await panel.$$eval('.reviews li', (els) => els.map((e) => (e.textContent ?? '').replace(/\s+/g, ' ').trim())), ['carol commented']);
  assert.match(text, /mergeable \(clean\)/);
  // The cost: the two requests of the session on the PR's branch, as the cost report groups them.
  const report = await callAs(server, `/api/cost?groupBy=pull_request&projectId=${projectId}`);
  const group = report.body.groups.find((g: { key: string | null }) => g.key === String(pr));
  assert.ok(group && group.costUsd > 0 && group.requests === 2, JSON.stringify(report.body));
  await page.waitForFunction(() => !/reading/.test(document.querySelector('dialog .cost')?.textContent ?? 'reading'));
  assert.match(((await page.textContent('dialog .cost')) ?? '').replace(/\s+/g, ' '), new RegExp(`^\\$${group.costUsd.toFixed(2)} over 2 LLM requests$`));
  assert.not.ok(existsSync(signal), 'nothing approved yet');
  await page.screenshot({ path: '.tmp/fleet-approve.png' });

  await page.fill('dialog textarea[name=text]', 'Looks right; lint is fixed in the next PR.');
  await page.click('dialog button:has-text("Approve")');
  await page.waitForSelector(`p[role=status]:has-text("Approved #${pr}: done.")`, { timeout: 30_000 });
  const written = JSON.parse(readFileSync(signal, 'utf8'));
  assert.equal([written.pr, written.decision, written.comment], [pr, 'approve', 'Looks right; lint is fixed in the next PR.']);
  assert.is(await page.$('dialog .approve-panel'), null, 'the dialog closed');
  await page.context().close();
});

test('Approve on a PR GitHub does not know: the error is shown as a warning and approving stays possible', async () => {
  const page = await fleetAs(operator);
  await page.click('section.slot[data-slot="2"] button:has-text("Approve")');
  const warn = await page.waitForSelector('dialog .inspect-error', { timeout: 30_000 });
  assert.match((await warn.textContent()) ?? '', new RegExp(`Could not read #${MISSING_PR}: .*#${MISSING_PR} of ${REPO} does not exist.*You can still approve`));
  // The cost is fetched beside the inspection: it may still be reading when the warning shows.
  await page.waitForFunction(() => !/reading/.test(document.querySelector('dialog .cost')?.textContent ?? 'reading'));
  assert.match((await page.textContent('dialog .cost')) ?? '', /no LLM requests attributed/);
  await page.click('dialog button:has-text("Approve without the inspection")');
  await page.waitForSelector(`p[role=status]:has-text("Approved #${MISSING_PR}: done.")`, { timeout: 30_000 });
  assert.ok(existsSync(join(root, '.svc', 'pr', `${MISSING_PR}.json`)));
  await page.context().close();
});

test('the runner offline: Approve warns that the PR could not be read, and approving anyway says in the dialog that pr.approve was not sent', async () => {
  await daemon.kill();
  const runnerId = (await callAs(server, `/api/projects/${projectId}`)).body.runnerId;
  await waitUntil(async () => (await callAs(server, '/api/runners')).body.runners.find((r: { id: string }) => r.id === runnerId)?.status === 'offline', 30_000, 'the runner offline');
  const page = await fleetAs(operator);
  await page.click('section.slot[data-slot="1"] button:has-text("Approve")');
  const warn = await page.waitForSelector('dialog .inspect-error', { timeout: 30_000 });
  assert.match((await warn.textContent()) ?? '', new RegExp(`Could not read #${pr}: the runner is offline; pr.inspect was not sent`));
  await page.click('dialog button:has-text("Approve without the inspection")');
  const refused = await page.waitForSelector('dialog p[role=alert].banner.failed', { timeout: 30_000 });
  assert.match((await refused.textContent()) ?? '', /the runner is offline; pr\.approve was not sent/);
  assert.ok(await page.$('dialog .approve-panel'), 'the dialog stays open');
  await page.context().close();
});

test('no console errors on any page above', () => {
  assert.equal(errors, []);
});

test.run();

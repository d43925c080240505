// A pull request's record on the Fleet page in a real browser against the real server (issue #40 part
// 3): a slot's pull request, approved on the page itself (Approve, then the dialog's Approve) and then
// merged, shows a Record button; its dialog holds the issue, the session's cost, the approval (by whom,
// "on the Fleet page", the checks then, its audit seq and hash) and the merge; Download JSON saves the
// API's answer as is. The runner is a protocol client that answers every command.
import { readFileSync } from 'node:fs';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { Browser } from 'playwright-core';
import { launchBrowser } from '../helpers/browser.ts';
import { startServer } from '../helpers/server.ts';
import type { RunningServer } from '../helpers/server.ts';
import { meta, send, tok, transcriptReq, uid } from '../helpers/usage-events.ts';
import { callAs } from '../helpers/users.ts';
import { connect, pairRunner } from '../helpers/wsclient.ts';
import type { Client } from '../helpers/wsclient.ts';
import { makeProject } from '../triggers/_harness.ts';

let server: RunningServer;
let browser: Browser;
let ws: Client;
let project = '';
const commands: string[] = [];
const BRANCH = 'svc/w1/issue-7';
const pr = { number: 5, url: 'https://github.com/acme/app/pull/5' };
const ev = (kind: string, id: string, slot: string | null, data: Record<string, unknown>) => ({
  id, source: `project:${project}`, kind, ts: new Date().toISOString(), payload: { project, ...(slot ? { slot, issue: 7 } : {}), data },
});

test.before(async () => {
  [server, browser] = await Promise.all([startServer({ admin: true }), launchBrowser()]);
  const r = await pairRunner(server.api, server.url, 'record-page');
  project = await makeProject(server, r.runnerId);
  ws = connect(server.url, r.token);
  await ws.next('welcome');
  ws.ws.on('message', (d) => {
    const f = JSON.parse(d.toString());
    if (f.type !== 'command') return;
    commands.push(f.name);
    const data =
      f.name === 'orchestrator.status' ? { present: false, state: 'absent', slots: [] }
      : f.name === 'pr.inspect' ? { number: 5, title: 'Fix the login', url: pr.url, state: 'open', draft: false, branch: BRANCH, base: 'main', mergeable: true, mergeableState: 'clean', files: [], filesComplete: true, additions: 1, deletions: 0, checks: { state: 'passed', summary: '2 passed', items: [] }, reviews: [] }
      : { approved: true };
    ws.send({ type: 'result', requestId: f.requestId, ok: true, data });
  });
  await send(ws, [
    ev('slot.dispatched', `sd.${uid()}`, 'w1', { title: 'Fix the login', branch: BRANCH }),
    ev('slot.checkpoint', `sc.${uid()}`, 'w1', { checkpoint: 'pr_open', summary: 'ready', pr }),
    ev('pr.opened', `gh.${project}.5.1.opened`, null, { pr, title: 'Fix the login', branch: BRANCH }),
    ev('pr.checks_changed', `gh.${project}.5.1.checks.1`, null, { pr, state: 'passed', summary: '2 passed', sha: 'a'.repeat(40) }),
  ]);
  const sid = `s-${uid()}`;
  await send(ws, [meta('claude', sid, { project, slot: 'w1', issue: '7', branch: BRANCH }), transcriptReq('claude', sid, 'claude-sonnet-4-5', `req_${uid()}`, tok(200_000, 20_000))]);
});
test.after(async () => {
  ws?.ws.close();
  await browser?.close();
  await server?.cleanup();
});

test('approve on the Fleet page, merge: the Record shows the approval and the merge with their audit records; Download JSON is the API answer', async () => {
  const context = await browser.newContext({ timezoneId: 'UTC', acceptDownloads: true });
  const page = await context.newPage();
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(e.message));
  await page.goto(`${server.url}/#/fleet/${project}`);
  await page.fill('input[name=email]', server.admin.email);
  await page.fill('input[name=password]', server.admin.password);
  await page.click('form button');
  const slot = page.locator('section.slot[data-slot="w1"]');
  await slot.locator('button:has-text("Approve")').click();
  const approve = page.locator('dialog[aria-label="Approve #5"] button:has-text("Approve")');
  await page.waitForSelector('dialog[aria-label="Approve #5"] button:has-text("Approve"):not([disabled])');
  await approve.click();
  await page.waitForSelector('.banner.ok:has-text("Approved #5")');
  assert.ok(commands.includes('pr.approve'));

  await send(ws, [ev('pr.merged', `gh.${project}.5.1.merged`, null, { pr, title: 'Fix the login' })]);
  const api = await callAs(server, `/api/projects/${project}/pulls/5/record`);
  assert.is(api.status, 200);
  assert.equal([api.body.approvals.map((a: { via: string }) => a.via), api.body.merge?.via], [['page'], 'runner']);

  await slot.locator('button:has-text("Record")').click();
  const dialog = page.locator('dialog[aria-label="Record of pull request #5"]');
  await dialog.locator('.pr-steps li[data-step="merged"]').waitFor();
  const text = (await dialog.textContent()) ?? '';
  for (const want of ['Fix the login', '#7', '1 agent session', 'Approved by', 'on the Fleet page', "seen by the runner's poll", '2 passed', 'Merged'])
    assert.ok(text.includes(want), `${want} in ${text}`);
  assert.equal(await dialog.locator('.pr-steps .audit-seq').allTextContents(), [String(api.body.approvals[0].audit.seq), String(api.body.merge.audit.seq)]);
  assert.is(await dialog.locator('li[data-step="approved"] .audit-hash').getAttribute('title'), api.body.approvals[0].audit.hash);
  const c: number = api.body.totals.costUsd;
  const digits = c < 1 ? 4 : 2;
  assert.ok(c > 0, 'the session cost something');
  assert.match(await dialog.locator('.pr-cost').textContent() ?? '', `$${c.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits })} over 1 agent session`);

  const [download] = await Promise.all([page.waitForEvent('download'), dialog.locator('a:has-text("Download JSON")').click()]);
  assert.is(download.suggestedFilename(), 'pull-5-record.json');
  const saved = JSON.parse(readFileSync((await download.path())!, 'utf8'));
  const { generatedAt: _a, auditHead: _h, ...want } = api.body;
  const { generatedAt: _b, auditHead: _g, ...got } = saved;
  assert.equal(got, want, 'the download is the API answer');
  assert.equal(errors, []);
  await context.close();
});

test.run();

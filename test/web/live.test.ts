// Live pages in a real browser (web-static/live.ts over GET /api/live): without a reload, the Runners
// page shows a runner go offline and online again, the Runs page shows a new run and its next state,
// and the bell counts a new notification. The pages' own polls are a minute or more apart: everything
// here is awaited for at most 15 s, so only the live connection can make it pass.
import { randomBytes } from 'node:crypto';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { Browser, Page } from 'playwright-core';
import { launchBrowser } from '../helpers/browser.ts';
import { startServer } from '../helpers/server.ts';
import type { RunningServer } from '../helpers/server.ts';
import { callAs } from '../helpers/users.ts';
import { connect, pairRunner } from '../helpers/wsclient.ts';
import type { Client } from '../helpers/wsclient.ts';

const LIVE_MS = 15_000;
let server: RunningServer;
let browser: Browser;
let runner: { runnerId: string; token: string };
let projectId = '';
test.before(async () => {
  [server, browser] = await Promise.all([startServer({ admin: true }), launchBrowser()]);
  runner = await pairRunner(server.api, server.url, 'live-box');
  const p = await callAs(server, '/api/projects', { method: 'POST', json: { name: 'Live', repo: 'acme/live', runnerId: runner.runnerId, rootPath: '/srv/live' } });
  assert.is(p.status, 201);
  projectId = p.body.id;
});
test.after(async () => {
  await browser?.close();
  await server?.cleanup();
});

async function signedInPage(path: string): Promise<{ page: Page; errors: string[] }> {
  const page = await browser.newPage();
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(e.message));
  // The page probes /api/me before sign-in; Chromium logs that expected 401 as a console error.
  page.on('console', (m) => m.type() === 'error' && !/status of 401/.test(m.text()) && errors.push(m.text()));
  await page.goto(server.url + path);
  await page.fill('input[name=email]', server.admin.email);
  await page.fill('input[name=password]', server.admin.password);
  await page.click('form button');
  // A marker that a reload would wipe.
  await page.waitForSelector('main h2');
  await page.evaluate(() => ((window as unknown as { liveMarker: number }).liveMarker = 1));
  return { page, errors };
}

const notReloaded = (page: Page) => page.evaluate(() => (window as unknown as { liveMarker?: number }).liveMarker === 1);
const rowText = (page: Page, selector: string, pattern: RegExp) =>
  page.waitForFunction(([sel, src]) => new RegExp(src).test(document.querySelector(sel)?.textContent ?? ''), [selector, pattern.source] as const, { timeout: LIVE_MS });

function runEvent(rc: Client, runId: string, state: string, extra: Record<string, unknown> = {}) {
  const now = new Date().toISOString();
  const payload = { runId, project: projectId, skill: 'review', args: [], output: 'report', profile: 'cc', runtime: 'claude', model: 'm', timeoutSec: 600, createdAt: now, branch: 'b', state, at: now, ...extra };
  rc.send({ type: 'events', events: [{ id: `run.${runId}.${state}`, source: `project:${projectId}`, kind: 'skill_run.state', ts: now, payload }] });
  return rc.next('ack');
}

test('Runners page: the runner goes offline, then online again, without a reload', async () => {
  let rc = connect(server.url, runner.token);
  await rc.next('welcome');
  const { page, errors } = await signedInPage('/#/runners');
  const row = 'tr[data-runner=live-box]';
  await rowText(page, row, /online/);
  rc.ws.close();
  await rowText(page, row, /offline/);
  rc = connect(server.url, runner.token);
  await rc.next('welcome');
  await rowText(page, row, /online/);
  assert.ok(await notReloaded(page), 'the page was not reloaded');
  rc.ws.close();
  await rowText(page, row, /offline/);
  assert.equal(errors, []);
  await page.close();
});

test('Runs page: a new run appears and moves to its next state; the bell counts a new notification', async () => {
  const rc = connect(server.url, runner.token);
  await rc.next('welcome');
  const { page, errors } = await signedInPage('/#/runs');
  await page.waitForSelector('text=/No runs|Skill/');
  const runId = `run-live-${randomBytes(3).toString('hex')}`;
  await runEvent(rc, runId, 'queued');
  await rowText(page, `tr[data-run="${runId}"]`, /queued/);
  await runEvent(rc, runId, 'running', { startedAt: new Date().toISOString() });
  await rowText(page, `tr[data-run="${runId}"]`, /running/);

  // A person.needed event becomes a notification (functions/notifications/capture.ts): the bell shows it.
  const before = Number((await page.getAttribute('[data-unread]', 'data-unread').catch(() => null)) ?? 0);
  const now = new Date().toISOString();
  rc.send({ type: 'events', events: [{ id: `ask-${runId}`, source: `project:${projectId}`, kind: 'person.needed', ts: now, payload: { project: projectId, slot: 's1', question: 'Which branch?' } }] });
  await rc.next('ack');
  await page.waitForFunction((n) => Number(document.querySelector('[data-unread]')?.getAttribute('data-unread') ?? 0) > n, before, { timeout: LIVE_MS });
  assert.ok(await notReloaded(page), 'the page was not reloaded');
  rc.ws.close();
  assert.equal(errors, []);
  await page.close();
});

test.run();

// Live pages in a real browser (web-static/live.ts over GET /api/live): without a reload, the Runners
// page shows a runner go offline and online again, the Runs page shows a new run and its next state,
// the bell counts a new notification, the Fleet page follows its runner's events and its going
// offline, the Projects page follows projects and members changed through the API, the Audit page a
// verification's result; a page whose live connection was cut re-fetches once it is back, showing
// what changed during the gap; and a change made after a page's first read but before its live connection
// was ready shows too. The pages' own polls are a minute or more apart (Projects and Audit
// have none): everything here is awaited for at most 15 s, so only the live connection can make it pass.
import { randomBytes } from 'node:crypto';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { Browser, Page } from 'playwright-core';
import { launchBrowser } from '../helpers/browser.ts';
import { startServer } from '../helpers/server.ts';
import type { RunningServer } from '../helpers/server.ts';
import { send } from '../helpers/usage-events.ts';
import type { Ev } from '../helpers/usage-events.ts';
import { callAs, makeUser } from '../helpers/users.ts';
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

async function signedInPage(path: string, before?: (page: Page) => Promise<unknown>): Promise<{ page: Page; errors: string[] }> {
  const page = await browser.newPage();
  await before?.(page);
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


let seq = 0;
/** A fleet event as the runner spools it (runner/fleet.ts). */
function fleetEvent(kind: string, extra: { slot?: string; issue?: number; data?: Record<string, unknown> } = {}): Ev {
  return {
    id: `fleet.live.${++seq}.${randomBytes(3).toString('hex')}`,
    source: `project:${projectId}`,
    kind,
    ts: new Date().toISOString(),
    payload: { project: projectId, type: kind, ...(extra.slot ? { slot: extra.slot } : {}), ...(extra.issue ? { issue: extra.issue } : {}), data: extra.data ?? {}, origin: 'runner' },
  };
}

test('Fleet page: slots, their PR and the orchestrator follow the runner\'s events; the runner going offline shows; without a reload', async () => {
  const rc = connect(server.url, runner.token);
  await rc.next('welcome');
  // The runner answers orchestrator.status (the page's live half) with whatever it is now.
  let status: Record<string, unknown> = { present: false, state: 'absent', slots: [] };
  rc.ws.on('message', (d) => {
    const f = JSON.parse(d.toString());
    if (f.type === 'command') rc.send({ type: 'result', requestId: f.requestId, ok: f.name === 'orchestrator.status', ...(f.name === 'orchestrator.status' ? { data: status } : { error: { code: 'disabled', message: 'not here' } }) });
  });
  const { page, errors } = await signedInPage(`/#/fleet/${projectId}`);
  await page.waitForSelector('section.orchestrator[data-state=absent]', { timeout: LIVE_MS });
  await page.waitForSelector('text=No worker slots yet');

  await send(rc, [fleetEvent('slot.dispatched', { slot: '1', issue: 12, data: { title: 'Fix the login', branch: 'svc/12' } })]);
  await rowText(page, 'section.slot[data-slot="1"]', /#12 Fix the login/);
  await send(rc, [
    fleetEvent('pr.opened', { slot: '1', issue: 12, data: { pr: { number: 40, url: 'https://github.example/acme/live/pull/40' }, title: 'Fix login' } }),
    fleetEvent('slot.checkpoint', { slot: '1', issue: 12, data: { checkpoint: 'pr_open', summary: 'waiting for review' } }),
  ]);
  await rowText(page, 'section.slot[data-slot="1"]', /pr_open: waiting for review/);
  assert.match((await page.textContent('section.slot[data-slot="1"]')) ?? '', /#40/);
  // The orchestrator starts: its event makes the page ask the runner again, which now says working.
  status = { present: true, state: 'working', session: `svc-${projectId}-orch`, slots: [{ slot: '1', session: 's1', state: 'working', issue: 12 }] };
  await send(rc, [fleetEvent('orchestrator.started', { data: { profile: 'cc' } })]);
  await page.waitForSelector('section.orchestrator[data-state=working]', { timeout: LIVE_MS });
  // The runner goes away: its offline notice makes the page re-read; the live state is unknown now.
  rc.ws.close();
  // The re-read's orchestrator.status first waits up to 5 s for a runner that was connected moments ago
  // to come back (functions/runners/commands.ts, RECONNECT_GRACE_MS): ~6 s on a quiet machine, so the
  // page's usual budget would leave a loaded one only 9 s for the notice and the re-read.
  await page.waitForSelector('section.orchestrator[data-state=unknown]', { timeout: LIVE_MS + 5_000 });
  await rowText(page, 'section.orchestrator', /Live state unavailable/);
  assert.ok(await notReloaded(page), 'the page was not reloaded');
  // Chromium logs the API's 503 (runner offline) as a console error: that one is expected.
  assert.equal(errors.filter((e) => !/status of 503/.test(e)), []);
  await page.close();
});

test('Fleet page: a re-read that comes back late does not overwrite a newer one', async () => {
  const rc = connect(server.url, runner.token);
  await rc.next('welcome');
  // The runner answers orchestrator.status at once, except the one it is told to hold.
  let hold = false;
  let held: ((data: Record<string, unknown>) => void) | null = null;
  let status: Record<string, unknown> = { present: false, state: 'absent', slots: [] };
  rc.ws.on('message', (d) => {
    const f = JSON.parse(d.toString());
    if (f.type !== 'command') return;
    const answer = (data: Record<string, unknown>) => rc.send({ type: 'result', requestId: f.requestId, ok: true, data });
    if (hold && f.name === 'orchestrator.status' && !held) held = answer;
    else answer(status);
  });
  const { page, errors } = await signedInPage(`/#/fleet/${projectId}`);
  await page.waitForSelector('section.orchestrator[data-state=absent]', { timeout: LIVE_MS });
  const statusAnswers = () => page.waitForResponse((r) => r.url().endsWith(`/api/projects/${projectId}/commands`), { timeout: LIVE_MS });
  // Read 1: its question reaches the runner, which holds it.
  hold = true;
  await send(rc, [fleetEvent('orchestrator.started', { data: { profile: 'cc' } })]);
  const deadline = Date.now() + LIVE_MS;
  while (!held && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
  assert.ok(held, 'the first re-read asked the runner');
  // Read 2 (a later notice): answered at once, idle; then read 1's answer comes back, saying working.
  status = { present: true, state: 'idle', session: `svc-${projectId}-orch`, slots: [] };
  const second = statusAnswers();
  await send(rc, [fleetEvent('orchestrator.started', { data: { profile: 'cc' } })]);
  await second;
  await page.waitForSelector('section.orchestrator[data-state=idle]', { timeout: LIVE_MS });
  const first = statusAnswers();
  held!({ present: true, state: 'working', session: `svc-${projectId}-orch`, slots: [] });
  await first;
  // The page has both answers now: the newer read's stays.
  await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));
  assert.is(await page.getAttribute('section.orchestrator', 'data-state'), 'idle');
  assert.ok(await notReloaded(page), 'the page was not reloaded');
  assert.equal(errors, []);
  rc.ws.close();
  await rc.closed;
  await page.close();
});

test('Projects page: a project created, renamed, given a member and deleted through the API shows without a reload', async () => {
  const { page, errors } = await signedInPage('/#/projects');
  await page.waitForSelector('tr[data-project=Live]');
  const made = await callAs(server, '/api/projects', { method: 'POST', json: { name: 'Arrives', repo: 'acme/arrives' } });
  assert.is(made.status, 201);
  await page.waitForSelector('tr[data-project=Arrives]', { timeout: LIVE_MS });
  await page.click('tr[data-project=Arrives] a');
  await page.waitForSelector('section.members');
  const member = await makeUser(server, 'live-member');
  assert.is((await callAs(server, `/api/projects/${made.body.id}/members/${member.id}`, { method: 'PUT', json: { role: 'operator' } })).status, 200);
  await page.waitForSelector(`tr[data-member="${member.email}"]`, { timeout: LIVE_MS });
  assert.is((await callAs(server, `/api/projects/${made.body.id}`, { method: 'PATCH', json: { name: 'Renamed' } })).status, 200);
  await page.waitForSelector('tr[data-project=Renamed]', { timeout: LIVE_MS });
  assert.is(await page.$('tr[data-project=Arrives]'), null);
  assert.is((await callAs(server, `/api/projects/${made.body.id}`, { method: 'DELETE' })).status, 204);
  await page.waitForSelector('tr[data-project=Renamed]', { state: 'detached', timeout: LIVE_MS });
  assert.ok(await notReloaded(page), 'the page was not reloaded');
  assert.equal(errors, []);
  await page.close();
});

test('Audit page: a verification run through the API shows its result without a reload', async () => {
  const { page, errors } = await signedInPage('/#/audit');
  const banner = await page.waitForSelector('.verification');
  const before = await banner.getAttribute('data-finished');
  assert.is((await callAs(server, '/api/schedules/audit.verify/run', { method: 'POST' })).status, 202);
  await page.waitForFunction((b) => {
    const el = document.querySelector('.verification[data-verified=ok]');
    return el !== null && el.getAttribute('data-finished') !== b;
  }, before, { timeout: LIVE_MS });
  assert.ok(await notReloaded(page), 'the page was not reloaded');
  assert.equal(errors, []);
  await page.close();
});

test('a cut live connection: what changed during the gap shows once the page is connected again', async () => {
  // The page's /api/live goes through this route: it can be cut, and the next connection held back.
  let cut: () => void = () => {};
  // The page counts a connection once the server's `ready` reached it (web-static/live.ts): only a cut
  // after that is a gap it catches up on. Waiting for the socket alone raced with `ready` on a slow machine.
  let ready!: () => void;
  const firstReady = new Promise<void>((r) => (ready = r));
  let gate: Promise<void> | null = null;
  let reached!: () => void;
  const reconnecting = new Promise<void>((r) => (reached = r));
  let connections = 0;
  const { page, errors } = await signedInPage('/#/projects', (p) =>
    p.routeWebSocket(/\/api\/live$/, async (ws) => {
      connections++;
      if (gate) {
        reached();
        await gate;
      }
      const upstream = ws.connectToServer();
      upstream.onMessage((m) => {
        ws.send(m); // forwarded in order: `ready` reaches the page before a later close does
        if (String(m).includes('"type":"ready"')) ready();
      });
      cut = () => (ws.close({ code: 1012, reason: 'cut by the test' }), upstream.close());
    }),
  );
  await page.waitForSelector('tr[data-project=Live]');
  await firstReady;
  let open!: () => void;
  gate = new Promise<void>((r) => (open = r));
  cut();
  await reconnecting; // the page is reconnecting; the server does not hear it yet
  const made = await callAs(server, '/api/projects', { method: 'POST', json: { name: 'DuringTheGap', repo: 'acme/gap' } });
  assert.is(made.status, 201);
  assert.is(await page.$('tr[data-project=DuringTheGap]'), null, 'no notice reached the page during the gap');
  open();
  await page.waitForSelector('tr[data-project=DuringTheGap]', { timeout: LIVE_MS });
  assert.is(connections, 2);
  assert.ok(await notReloaded(page), 'the page was not reloaded');
  assert.equal(errors, []);
  await page.close();
});

test('a change after the page\'s first read and before its live connection is ready shows without a reload', async () => {
  // Every /api/live connection of this page is held here until the test lets it through: the page reads its
  // projects, the change is made, and only then does the server's `ready` reach the page.
  let release!: () => void;
  const held = new Promise<void>((r) => (release = r));
  let reached!: () => void;
  const connecting = new Promise<void>((r) => (reached = r));
  const { page, errors } = await signedInPage('/#/projects', (p) =>
    p.routeWebSocket(/\/api\/live$/, async (ws) => {
      reached();
      await held;
      const upstream = ws.connectToServer();
      upstream.onMessage((m) => ws.send(m));
    }),
  );
  await page.waitForSelector('tr[data-project=Live]');
  await connecting;
  const made = await callAs(server, '/api/projects', { method: 'POST', json: { name: 'BeforeReady', repo: 'acme/before-ready' } });
  assert.is(made.status, 201);
  assert.is(await page.$('tr[data-project=BeforeReady]'), null, 'the page read its projects before the change');
  release();
  await page.waitForSelector('tr[data-project=BeforeReady]', { timeout: LIVE_MS });
  assert.ok(await notReloaded(page), 'the page was not reloaded');
  assert.equal(errors, []);
  await page.close();
});

test.run();

// The admin Cost page in a real browser against the real server, with LLM requests sent by a paired
// runner through the hub: totals and the SVG charts by day, project and model (bars, labels and
// tables) equal GET /api/cost for the page's range; an unpriced model is listed and an instance admin
// prices it from there; an instance admin adds a price version with an effective date; a project
// admin saves their project's budget, which a viewer is shown but not offered to change.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { Browser, Page } from 'playwright-core';
import { usd } from '../../web-static/components.ts';
import { launchBrowser } from '../helpers/browser.ts';
import { startServer } from '../helpers/server.ts';
import type { RunningServer } from '../helpers/server.ts';
import { iso, meta, send, tok, transcriptReq, uid } from '../helpers/usage-events.ts';
import { callAs, makeUser } from '../helpers/users.ts';
import type { TestUser } from '../helpers/users.ts';
import { connect, pairRunner } from '../helpers/wsclient.ts';
import type { Client } from '../helpers/wsclient.ts';

const DAY = 86_400_000;
const MYSTERY = 'mystery-cost-model';
let server: RunningServer;
let browser: Browser;
let runner: Client;
let p1 = '';
let p2 = '';
let padmin: TestUser; // admin of p1, viewer of p2
let viewer: TestUser; // viewer of p1
const call = (path: string, init: { method?: string; json?: unknown; token?: string } = {}) => callAs(server, path, init);

test.before(async () => {
  [server, browser] = await Promise.all([startServer({ admin: true }), launchBrowser()]);
  const paired = await pairRunner(server.api, server.url, 'cost-page');
  const mk = async (name: string) => (await call('/api/projects', { method: 'POST', json: { name, repo: `acme/${name}`, runnerId: paired.runnerId, rootPath: `/srv/${name}` } })).body.id;
  p1 = await mk('apollo');
  p2 = await mk('zephyr');
  [padmin, viewer] = await Promise.all([makeUser(server, 'padmin'), makeUser(server, 'pviewer')]);
  for (const [p, u, role] of [[p1, padmin, 'admin'], [p2, padmin, 'viewer'], [p1, viewer, 'viewer']] as const) {
    assert.is((await call(`/api/projects/${p}/members/${u.id}`, { method: 'PUT', json: { role } })).status, 200);
  }
  runner = connect(server.url, paired.token);
  await runner.next('welcome');
  const [s1, s2, s3] = [`c1-${uid()}`, `x1-${uid()}`, `c2-${uid()}`];
  const at = (days: number) => ({ at: iso(-days * DAY - 60_000) });
  await send(runner, [
    meta('claude', s1, { project: p1, issue: '17', models: ['claude-sonnet-4-5'], firstAt: iso(-3 * DAY), lastAt: iso(-30_000) }),
    transcriptReq('claude', s1, 'claude-sonnet-4-5', `req_${uid()}`, tok(1000, 500, 2000, 0, 30_000), { project: p1, ...at(2) }),
    transcriptReq('claude', s1, 'claude-sonnet-4-5', `req_${uid()}`, tok(300, 900), { project: p1, ...at(0) }),
    meta('codex', s2, { project: p1, models: ['gpt-5'], firstAt: iso(-2 * DAY), lastAt: iso(-DAY) }),
    transcriptReq('codex', s2, 'gpt-5', null, tok(20_000, 4000, 0, 0, 8000), { project: p1, ...at(1) }),
    meta('claude', s3, { project: p2, models: ['claude-haiku-4-5', MYSTERY], firstAt: iso(-2 * DAY), lastAt: iso(-30_000) }),
    transcriptReq('claude', s3, 'claude-haiku-4-5', `req_${uid()}`, tok(5000, 700), { project: p2, ...at(1) }),
    transcriptReq('claude', s3, MYSTERY, `req_${uid()}`, tok(77, 88), { project: p2, ...at(0) }),
  ]);
});
test.after(async () => {
  runner?.ws.close();
  await browser?.close();
  await server?.cleanup();
});

async function open(path: string, who: { email: string; password: string } = server.admin): Promise<Page> {
  const page = await (await browser.newContext({ timezoneId: 'UTC' })).newPage();
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(e.message));
  (page as Page & { errors: string[] }).errors = errors;
  await page.goto(server.url + path);
  await page.fill('input[name=email]', who.email);
  await page.fill('input[name=password]', who.password);
  await page.click('form button');
  await page.waitForSelector('h2:has-text("Cost")');
  await page.waitForSelector('dl.totals');
  return page;
}
const errorsOf = (page: Page) => (page as Page & { errors: string[] }).errors;
const bars = (page: Page, chart: string) =>
  page.$$eval(`svg[data-chart=${chart}] g.bar`, (gs) =>
    gs.map((g) => ({ key: g.getAttribute('data-key'), value: Number(g.getAttribute('data-value')), title: g.querySelector('title')?.textContent ?? '', label: [...g.querySelectorAll('text')].map((t) => t.textContent).join(' ') })),
  );
const tableCosts = (page: Page, group: string) =>
  page.$$eval(`table.cost-table[data-group=${group}] tbody tr`, (rows) => rows.map((r) => [r.getAttribute('data-key'), Number(r.querySelector('td.cost')?.getAttribute('data-cost'))]));

async function costOf(page: Page, groupBy: string) {
  const [from, to] = [await page.inputValue('input[name=from]'), await page.inputValue('input[name=to]')];
  const answer = await call(`/api/cost?groupBy=${groupBy}&from=${from}&to=${to}&tz=UTC`);
  assert.is(answer.status, 200);
  return answer.body as { groups: { key: string | null; label?: string; costUsd: number; requests: number; unpricedRequests: number }[]; totals: Record<string, number> };
}

test('totals, and the charts by day, project and model with their tables, equal /api/cost for the range shown', async () => {
  const page = await open('/#/cost');
  await page.waitForSelector('svg[data-chart=chart-day] g.bar');
  const today = new Date().toISOString().slice(0, 10);
  assert.is(await page.inputValue('input[name=to]'), today);
  assert.is(await page.inputValue('input[name=from]'), new Date(Date.now() - 29 * DAY).toISOString().slice(0, 10), 'the last 30 days');

  const day = await costOf(page, 'day');
  assert.is(day.groups.length, 3);
  assert.is(day.totals.unpricedRequests, 1);
  assert.is((await page.textContent('.total-cost dd'))?.trim(), usd(day.totals.costUsd));
  assert.is((await page.textContent('.total-requests dd'))?.trim(), '5');
  assert.is((await page.textContent('.total-unpriced dd'))?.trim(), '1');

  // One bar per day of the range; the days with requests carry their cost, and their tooltips say it.
  const dayBars = await bars(page, 'chart-day');
  assert.is(dayBars.length, 30);
  assert.equal(
    dayBars.filter((b) => b.value > 0).map((b) => [b.key, b.value]),
    day.groups.map((g) => [g.key, g.costUsd]),
  );
  for (const g of day.groups) assert.ok(dayBars.find((b) => b.key === g.key)!.title.startsWith(`${g.key}: ${usd(g.costUsd)}, ${g.requests} request`), 'the tooltip');
  assert.ok(dayBars[0].label.includes(dayBars[0].key!.slice(5)), 'the first day is labelled MM-DD');
  assert.equal(await tableCosts(page, 'day'), day.groups.map((g) => [g.key, g.costUsd]));
  const svg = await page.$('svg[data-chart=chart-day]');
  assert.is(await svg!.getAttribute('role'), 'img');
  assert.is((await page.textContent('#chart-day-title'))?.trim(), 'Cost by day');
  assert.ok(((await page.textContent('#chart-day-desc')) ?? '').includes(`${usd(day.totals.costUsd)} in all`));

  for (const [groupBy, names] of [['project', { [p1]: 'apollo', [p2]: 'zephyr' }], ['model', null]] as const) {
    const answer = await costOf(page, groupBy);
    const drawn = await bars(page, `chart-${groupBy}`);
    assert.equal(drawn.map((b) => [b.key, b.value]), answer.groups.map((g) => [g.key, g.costUsd]), `${groupBy} bars`);
    for (const [i, g] of answer.groups.entries()) {
      const label = names ? names[g.key!] : g.key!;
      const value = g.unpricedRequests === g.requests ? 'unpriced' : usd(g.costUsd); // never "$0" for an unpriced model
      assert.ok(drawn[i].label.startsWith(label) && drawn[i].label.endsWith(value), `${groupBy} label: ${drawn[i].label}`);
    }
    assert.equal(await tableCosts(page, groupBy), answer.groups.map((g) => [g.key, g.costUsd]));
  }
  const mystery = (await bars(page, 'chart-model')).find((b) => b.key === MYSTERY)!;
  assert.equal([mystery.value, /1 unpriced/.test(mystery.title)], [0, true]);
  assert.match((await page.textContent(`table.cost-table[data-group=model] tr[data-key="${MYSTERY}"] td.cost`)) ?? '', /unpriced/);

  // The breakdown by issue (the default): issue 17's session.
  const issue = await costOf(page, 'issue');
  assert.equal(await tableCosts(page, 'issue'), issue.groups.map((g) => [g.key ?? '', g.costUsd]));
  assert.match((await page.textContent('table.cost-table[data-group=issue] tr[data-key="17"]')) ?? '', /#17/);

  // One project: the form puts the range in the link, and the charts follow it.
  await page.selectOption('form.filters select[name=projectId]', p2);
  await page.click('form.filters button');
  await page.waitForFunction(() => document.querySelectorAll('svg[data-chart=chart-project] g.bar').length === 1);
  assert.match(page.url(), new RegExp(`projectId=${p2}`));
  assert.equal((await bars(page, 'chart-project')).map((b) => b.key), [p2]);

  // A range the server refuses: its reason, plainly.
  await page.goto(`${server.url}/#/cost?from=last-week`);
  const alert = await page.waitForSelector('[role=alert]:has-text("Could not load the cost")');
  assert.match((await alert.textContent()) ?? '', /from/);
  assert.equal(errorsOf(page), []);
  await page.context().close();
});

test('an unpriced model is listed; an instance admin sets its price from there and its requests are counted', async () => {
  const page = await open('/#/cost');
  const row = await page.waitForSelector(`.unknown-models tr[data-model="${MYSTERY}"]`);
  assert.match((await row.textContent()) ?? '', /1/);
  await page.click(`.unknown-models tr[data-model="${MYSTERY}"] a.set-price`);
  await page.waitForSelector('form.price-form');
  assert.match(page.url(), new RegExp(`price=${MYSTERY}`));
  assert.is(await page.inputValue('form.price-form input[name=model]'), MYSTERY);
  assert.is(await page.inputValue('form.price-form input[name=effectiveFrom]'), '1970-01-01T00:00', 'from the start, so seen requests get priced');
  await page.fill('form.price-form input[name=inputUsdPerMTok]', '2');
  await page.fill('form.price-form input[name=outputUsdPerMTok]', '8');
  await page.click('form.price-form button:has-text("Add version")');
  await page.waitForSelector('[role=status]:has-text("Price version saved")');
  await page.waitForSelector(`table.price-table tr[data-model="${MYSTERY}"]`);
  await page.waitForFunction(() => !document.querySelector('.unknown-models'));
  assert.equal((await call('/api/cost/unknown-models')).body.models, []);
  const price = (await call(`/api/prices/${MYSTERY}`)).body;
  assert.equal([price.inputUsdPerMTok, price.outputUsdPerMTok, price.versions.length], [2, 8, 1]);
  await page.waitForFunction(() => document.querySelector('.total-unpriced dd')?.textContent?.trim() === '0');
  const expected = (77 * 2 + 88 * 8) / 1e6;
  const bar = (await bars(page, 'chart-model')).find((b) => b.key === MYSTERY)!;
  assert.ok(Math.abs(bar.value - expected) < 1e-12, `${bar.value} ≈ ${expected}`);
  assert.equal(errorsOf(page), []);
  await page.context().close();
});

test('an instance admin adds a price version with an effective date; the earlier one stays in force until then', async () => {
  const page = await open('/#/cost');
  await page.click('table.price-table tr[data-model="claude-haiku-4-5"] button:has-text("Add a version")');
  await page.waitForSelector('form.price-form .versions');
  assert.is(await page.inputValue('form.price-form input[name=inputUsdPerMTok]'), '1', 'the current price is the starting point');
  const from = new Date(Date.now() + 2 * DAY);
  const local = `${from.toISOString().slice(0, 10)}T09:30`; // the context's zone is UTC
  await page.fill('form.price-form input[name=inputUsdPerMTok]', '1.5');
  await page.fill('form.price-form input[name=effectiveFrom]', local);
  await page.click('form.price-form button:has-text("Add version")');
  await page.waitForSelector('[role=status]:has-text("Price version saved for claude-haiku-4-5")');
  const price = (await call('/api/prices/claude-haiku-4-5')).body;
  assert.is(price.versions.length, 2);
  assert.equal([price.versions[1].inputUsdPerMTok, price.versions[1].outputUsdPerMTok, price.versions[1].effectiveFrom], [1.5, 5, `${local}:00.000Z`]);
  assert.is(price.inputUsdPerMTok, 1, 'the old version is in force now');
  await page.waitForSelector('table.price-table tr[data-model="claude-haiku-4-5"]:has-text("2 versions")');
  assert.equal(errorsOf(page), []);
  await page.context().close();
});

test("a project admin saves their project's budget and sees the month's spend; elsewhere and for a viewer it is shown, not offered", async () => {
  const page = await open('/#/cost', padmin);
  await page.waitForSelector(`.budgets tr[data-project="${p1}"] form.budget-form`);
  assert.is(await page.$(`.budgets tr[data-project="${p2}"] form`), null, 'viewer of p2: no form');
  assert.match((await page.textContent(`.budgets tr[data-project="${p2}"]`)) ?? '', /Set by the project's admins/);
  assert.is(await page.$('table.price-table button'), null, 'not an instance admin: no price edits');
  assert.is(await page.$('button:has-text("Add a price")'), null);

  await page.fill(`.budgets tr[data-project="${p1}"] input[name=budgetUsd]`, '0.5');
  await page.selectOption(`.budgets tr[data-project="${p1}"] select[name=action]`, 'stop');
  await page.click(`.budgets tr[data-project="${p1}"] button:has-text("Save")`);
  await page.waitForSelector(`.budgets tr[data-project="${p1}"] [role=status]:has-text("Saved")`);
  const budget = (await call(`/api/projects/${p1}/budget`)).body;
  assert.equal([budget.budgetUsd, budget.action], [0.5, 'stop']);
  const spend = (await page.textContent(`.budgets tr[data-project="${p1}"] td.spend`)) ?? '';
  assert.ok(spend.includes(usd(budget.monthToDateUsd)), spend);
  assert.ok(spend.includes(`${budget.percent.toFixed(1)} %`), spend);
  assert.equal(errorsOf(page), []);
  await page.context().close();

  const seen = await open('/#/cost', viewer);
  const row = await seen.waitForSelector(`.budgets tr[data-project="${p1}"]`);
  assert.match((await row.textContent()) ?? '', /\$0\.5000 a month, stop/);
  assert.equal(await row.$$('input, select, button'), [], 'a viewer gets no budget controls');
  assert.is(await seen.$('.unknown-models a.set-price'), null);
  const refused = await call(`/api/projects/${p1}/budget`, { method: 'PUT', json: { budgetUsd: 1000, action: 'warn' }, token: viewer.token });
  assert.is(refused.status, 403);
  assert.equal(errorsOf(seen), []);
  await seen.context().close();
});

test.run();

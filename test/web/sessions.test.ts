// The admin Sessions page in a real browser against the real server: what it says before there is a
// runner and before any session arrives; sessions sent by a paired runner (session.meta, llm.request
// through the hub) listed with their tokens and cost, a page at a time; filters by runtime, model,
// project and time; a session's requests with tokens by kind, cost, reported cost, duration and source
// (transcript + OTel merged into one request), reachable by its link.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { Browser, Page } from 'playwright-core';
import { DEFAULT_PRICES, costUsd, findPrice } from '../../protocol/prices.ts';
import { usd } from '../../web-static/components.ts';
import { launchBrowser } from '../helpers/browser.ts';
import { startServer } from '../helpers/server.ts';
import type { RunningServer } from '../helpers/server.ts';
import { ev, iso, meta, otelReq, send, tok, transcriptReq, uid } from '../helpers/usage-events.ts';
import { callAs } from '../helpers/users.ts';
import { connect, pairRunner } from '../helpers/wsclient.ts';
import type { Client } from '../helpers/wsclient.ts';

const DAY = 86_400_000;
let server: RunningServer;
let browser: Browser;
let runner: Client;
let p1 = '';
let p2 = '';
const alpha = `sess-alpha-${uid()}`; // claude, p1: a merged transcript + OTel request and a line without request id
const codex = `sess-codex-${uid()}`; // codex, p1, five days ago
const mystery = `sess-mystery-${uid()}`; // claude, p2, a model without a price
const reqA = `req_${uid()}`;
const tA = tok(1000, 500, 2000, 100, 30_000);
const tB = tok(10, 20);
const tC = tok(4000, 800, 0, 0, 1200);
const price = (model: string, t: ReturnType<typeof tok>) => costUsd(t, findPrice(model, DEFAULT_PRICES)!);

test.before(async () => {
  [server, browser] = await Promise.all([startServer({ admin: true }), launchBrowser()]);
});
test.after(async () => {
  runner?.ws.close();
  await browser?.close();
  await server?.cleanup();
});

async function open(path: string): Promise<Page> {
  const page = await (await browser.newContext({ timezoneId: 'UTC' })).newPage();
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(e.message));
  (page as Page & { errors: string[] }).errors = errors;
  await page.goto(server.url + path);
  await page.fill('input[name=email]', server.admin.email);
  await page.fill('input[name=password]', server.admin.password);
  await page.click('form button');
  await page.waitForSelector('h2:has-text("Sessions")');
  return page;
}
const errorsOf = (page: Page) => (page as Page & { errors: string[] }).errors;
const rowText = async (page: Page, sid: string) => (await page.textContent(`tr[data-session="${sid}"]`)) ?? '';
const listed = (page: Page) => page.$$eval('table.sessions tbody tr', (rows) => rows.map((r) => r.getAttribute('data-session')));

test('before a runner: "No runner yet" and where to pair; with a runner and no sessions: how sessions arrive', async () => {
  const page = await open('/#/sessions');
  const note = await page.waitForSelector('[data-empty=no-runner]');
  assert.match((await note.textContent()) ?? '', /No runner yet/);
  assert.ok(await page.$('[data-empty=no-runner] a[href="#/runners"]'), 'a link to the Runners page');

  const paired = await pairRunner(server.api, server.url, 'sessions-page');
  const mk = async (name: string) => (await callAs(server, '/api/projects', { method: 'POST', json: { name, repo: `acme/${name}`, runnerId: paired.runnerId, rootPath: `/srv/${name}` } })).body.id;
  p1 = await mk('alpha');
  p2 = await mk('beta');
  runner = connect(server.url, paired.token);
  await runner.next('welcome');

  await page.reload();
  const how = await page.waitForSelector('[data-empty=no-sessions]');
  const text = (await how.textContent()) ?? '';
  assert.match(text, /No sessions yet/);
  assert.match(text, /Claude Code transcripts/);
  assert.match(text, /http:\/\/127\.0\.0\.1:4318/);
  assert.match(text, /docs\/runner\.md/);
  assert.equal(errorsOf(page), []);
  await page.context().close();
});

test('sessions with tokens and cost, newest first, 25 a page; Older and Newer page through them', async () => {
  const fillers = Array.from({ length: 26 }, (_, i) => `sess-fill-${i}-${uid()}`);
  await send(runner, [
    meta('claude', alpha, { project: p1, issue: '17', branch: 'feat-a', models: ['claude-sonnet-4-5'], firstAt: iso(-3600_000), lastAt: iso(-60_000) }),
    transcriptReq('claude', alpha, 'claude-sonnet-4-5', reqA, tA),
    otelReq(alpha, 'claude-sonnet-4-5', reqA, tA, { durationMs: 4321, reportedCostUsd: 0.0123 }),
    transcriptReq('claude', alpha, 'claude-sonnet-4-5', null, tB, { at: iso(-90_000) }),
    meta('codex', codex, { project: p1, models: ['gpt-5'], firstAt: iso(-5 * DAY), lastAt: iso(-5 * DAY + 3600_000) }),
    transcriptReq('codex', codex, 'gpt-5', null, tC, { at: iso(-5 * DAY + 60_000) }),
    meta('claude', mystery, { project: p2, models: ['mystery-model-x'], firstAt: iso(-1800_000), lastAt: iso(-600_000) }),
    transcriptReq('claude', mystery, 'mystery-model-x', `req_${uid()}`, tok(50, 60)),
    ...fillers.flatMap((f, i) => [
      meta('claude', f, { project: p2, models: ['claude-haiku-4-5'], firstAt: iso(-2 * DAY - i * 60_000), lastAt: iso(-2 * DAY - i * 60_000 + 30_000) }),
      transcriptReq('claude', f, 'claude-haiku-4-5', `req_${uid()}`, tok(100, 10), { at: iso(-2 * DAY - i * 60_000 + 10_000) }),
    ]),
  ]);
  const api = (await callAs(server, '/api/sessions?limit=200')).body.sessions as Record<string, any>[];
  const a = api.find((s) => s.sessionId === alpha)!;
  assert.ok(Math.abs(a.costUsd - (price('claude-sonnet-4-5', tA) + price('claude-sonnet-4-5', tB))) < 1e-9, 'the API prices it at the seeded price');

  const page = await open('/#/sessions');
  await page.waitForSelector(`tr[data-session="${alpha}"]`);
  const row = await rowText(page, alpha);
  assert.ok(row.includes(usd(a.costUsd)), `cost ${usd(a.costUsd)} in: ${row}`);
  assert.match(row, /alpha/);
  assert.match(row, /issue 17/);
  assert.ok(row.includes('1,010 in · 520 out · 2,100 cache write · 30,000 cache read'), row);
  assert.match(await rowText(page, mystery), /unpriced/);
  assert.not.match(await rowText(page, mystery), /\$0\.0000/, 'an unpriced session is not $0');

  const first = await listed(page);
  assert.is(first.length, 25);
  assert.equal(first.slice(0, 2), [mystery, alpha], 'newest first (by start)');
  assert.not.ok(first.includes(codex), 'the five-day-old session is on the next page');
  assert.ok(await page.isDisabled('button:has-text("Newer")'));
  await page.click('button:has-text("Older")');
  await page.waitForSelector(`tr[data-session="${codex}"]`);
  const second = await listed(page);
  assert.is(second.length, 4);
  assert.ok(await page.isDisabled('button:has-text("Older")'));
  await page.click('button:has-text("Newer")');
  await page.waitForSelector(`tr[data-session="${alpha}"]`);
  assert.equal(errorsOf(page), []);
  await page.context().close();
});

test('filters: runtime, model, project and time range; each filter is in the link', async () => {
  const page = await open('/#/sessions');
  await page.waitForSelector(`tr[data-session="${alpha}"]`);
  await page.selectOption('select[name=runtime]', 'codex');
  await page.click('form.filters button');
  await page.waitForFunction(() => document.querySelectorAll('table.sessions tbody tr').length === 1);
  assert.equal(await listed(page), [codex]);
  assert.match(page.url(), /#\/sessions\?runtime=codex$/);

  await page.goto(`${server.url}/#/sessions?model=mystery-model-x`);
  await page.waitForFunction(() => document.querySelectorAll('table.sessions tbody tr').length === 1);
  assert.equal(await listed(page), [mystery]);
  assert.is(await page.inputValue('input[name=model]'), 'mystery-model-x', 'the form shows the filter of the link');

  await page.goto(`${server.url}/#/sessions?projectId=${p1}`);
  await page.waitForFunction(() => document.querySelectorAll('table.sessions tbody tr').length === 2);
  assert.equal((await listed(page)).sort(), [alpha, codex].sort());

  // From three days ago: the five-day-old codex session is left out.
  await page.fill('input[name=from]', new Date(Date.now() - 3 * DAY).toISOString().slice(0, 10));
  await page.click('form.filters button');
  await page.waitForFunction(() => document.querySelectorAll('table.sessions tbody tr').length === 1);
  assert.equal(await listed(page), [alpha]);

  await page.goto(`${server.url}/#/sessions?model=no-such-model`);
  const none = await page.waitForSelector('[role=note]:has-text("No sessions match")');
  assert.ok(await none.$('a[href="#/sessions"]'));
  assert.equal(errorsOf(page), []);
  await page.context().close();
});

test("a session's requests: model, tokens by kind, cost, reported cost, duration, source; the detail is a link", async () => {
  const page = await open('/#/sessions');
  await page.click(`tr[data-session="${alpha}"] a`);
  await page.waitForSelector('.session-detail tr[data-request]');
  const id = await page.getAttribute('.session-detail', 'data-id');
  assert.match(page.url(), new RegExp(`#/sessions\\?session=${id}$`));
  const detail = (await callAs(server, `/api/sessions/${id}`)).body;
  assert.is(detail.requests.length, 2, 'transcript line and OTel record are one request');

  const merged = (await page.textContent(`tr[data-request="${reqA}"]`)) ?? '';
  const cells = await page.$$eval(`tr[data-request="${reqA}"] td`, (tds) => tds.map((td) => td.textContent?.trim()));
  assert.equal(cells.slice(1), ['claude-sonnet-4-5', '1,000', '500', '2,000', '100', '30,000', usd(price('claude-sonnet-4-5', tA)), '$0.0123', '4.3 s', 'transcript + otlp'], merged);
  const other = detail.requests.find((r: { requestId: string | null }) => r.requestId === null);
  const otherCells = await page.$$eval(`tr[data-request="${other.id}"] td`, (tds) => tds.map((td) => td.textContent?.trim()));
  assert.equal(otherCells.slice(1), ['claude-sonnet-4-5', '10', '20', '0', '0', '0', usd(price('claude-sonnet-4-5', tB)), '—', '—', 'transcript']);
  const dl = (await page.textContent('.session-detail dl')) ?? '';
  assert.match(dl, /feat-a/);
  assert.ok(dl.includes(usd(detail.costUsd)));

  // The link opens the session by itself, and "All sessions" goes back to the list.
  const fresh = await open(`/#/sessions?session=${id}`);
  await fresh.waitForSelector(`.session-detail tr[data-request="${reqA}"]`);
  await fresh.click('a:has-text("All sessions")');
  await fresh.waitForSelector(`tr[data-session="${alpha}"]`);

  // A session of a model without a price: "unpriced", never $0, and where to add a price.
  const m = (await callAs(server, '/api/sessions?limit=200')).body.sessions.find((s: { sessionId: string }) => s.sessionId === mystery);
  await fresh.goto(`${server.url}/#/sessions?session=${m.id}`);
  await fresh.waitForSelector('.session-detail tr[data-request]');
  assert.is((await fresh.textContent('.session-detail tr[data-request] td.cost'))?.trim(), 'unpriced');
  assert.ok(await fresh.$('.session-detail a[href="#/cost"]'));

  await fresh.goto(`${server.url}/#/sessions?session=no-such-session`);
  await fresh.waitForSelector('[role=alert]:has-text("Could not load the session")');
  assert.equal([...errorsOf(page), ...errorsOf(fresh)], []);
  await page.context().close();
  await fresh.context().close();
});

test('a Gemini CLI session: chat message and OTel record one request at the Gemini price, shown and filtered as Gemini CLI', async () => {
  const gem = `sess-gemini-${uid()}`;
  const rid = `gemini:${gem}:abc123`;
  const t = tok(3801 + 7, 23 + 919, 0, 0, 11526);
  await send(runner, [
    meta('gemini', gem, { project: p1, models: ['gemini-2.5-pro'], firstAt: iso(-600_000), lastAt: iso(-300_000) }),
    transcriptReq('gemini', gem, 'gemini-2.5-pro', rid, t, { key: `gemini:${gem}:msg-1`, messageId: 'msg-1', reasoningTokens: 919 }),
    ev('llm.request', { key: `gemini:otlp:${gem}:1`, runtime: 'gemini', source: 'otlp', sessionId: gem, requestId: rid, model: 'gemini-2.5-pro', at: iso(-119_000), ...t, durationMs: 1234 }),
  ]);
  const s = (await callAs(server, '/api/sessions?runtime=gemini')).body.sessions as Record<string, any>[];
  assert.equal(s.map((x) => x.sessionId), [gem]);
  const detail = (await callAs(server, `/api/sessions/${s[0]!.id}`)).body;
  assert.is(detail.requests.length, 1, 'the chat message and its api_response record are one request');
  assert.ok(Math.abs(detail.costUsd - price('gemini-2.5-pro', t)) < 1e-9, 'priced at the seeded Gemini price');
  const page = await open('/#/sessions');
  await page.waitForSelector(`tr[data-session="${gem}"]`);
  assert.match(await rowText(page, gem), /Gemini CLI · gemini-2\.5-pro/);
  await page.selectOption('select[name=runtime]', 'gemini');
  await page.click('form.filters button');
  await page.waitForFunction(() => document.querySelectorAll('table.sessions tbody tr').length === 1);
  assert.equal(await listed(page), [gem]);
  assert.equal(errorsOf(page), []);
  await page.context().close();
});

test('an OpenCode session: its message one request at the seeded price (recorded cost kept aside), shown and filtered as OpenCode', async () => {
  const oc = `ses_oc${uid()}`;
  const t = tok(22000, 3000, 4000, 0, 50000);
  await send(runner, [
    meta('opencode', oc, { project: p1, models: ['qwen3-coder'], firstAt: iso(-600_000), lastAt: iso(-300_000) }),
    transcriptReq('opencode', oc, 'qwen3-coder', `opencode:msg_${oc}`, t, { key: `opencode:msg_${oc}`, messageId: `msg_${oc}` }),
  ]);
  const s = (await callAs(server, '/api/sessions?runtime=opencode')).body.sessions as Record<string, any>[];
  assert.equal(s.map((x) => x.sessionId), [oc]);
  const detail = (await callAs(server, `/api/sessions/${s[0]!.id}`)).body;
  assert.is(detail.requests.length, 1);
  assert.ok(Math.abs(detail.costUsd - price('qwen3-coder', t)) < 1e-9, 'priced at the seeded OpenCode price');
  const cost = (await callAs(server, '/api/cost?groupBy=model&runtime=opencode')).body.groups as Record<string, any>[];
  assert.equal(cost.map((g) => [g.key, g.inputTokens]), [['qwen3-coder', 22000]], 'the cost API filters it by runtime opencode');
  const page = await open('/#/sessions');
  await page.waitForSelector(`tr[data-session="${oc}"]`);
  assert.match(await rowText(page, oc), /OpenCode · qwen3-coder/);
  await page.selectOption('select[name=runtime]', 'opencode');
  await page.click('form.filters button');
  await page.waitForFunction(() => document.querySelectorAll('table.sessions tbody tr').length === 1);
  assert.equal(await listed(page), [oc]);
  assert.equal(errorsOf(page), []);
  await page.context().close();
});

test.run();

// Small things a new user met in the first hour (issue #34 item 5), in Chromium against the real server
// and the real runner bundle: what Integrations and Schedules say to an instance admin with no project,
// the schedule form, spaces before inline code, the Audit banner's count, an unpaired runner's code (new
// one on demand, gone from the page once expired), `doctor` on Runners, the bell as an SVG, and the
// Terminal saying that nothing runs before Attach.
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { launchBrowser } from '../helpers/browser.ts';
import { startServer } from '../helpers/server.ts';
import type { RunningServer } from '../helpers/server.ts';
import { killDaemons, runCli, sandbox, startDaemon } from '../runner/_harness.ts';
import type { Sandbox } from '../runner/_harness.ts';

let server: RunningServer;
let browser: Browser;
let sb: Sandbox;
const socket = `svc-first-hour-${process.pid}`;

test.before(async () => {
  [server, browser] = await Promise.all([startServer({ admin: true }), launchBrowser()]);
});
test.after(async () => {
  await killDaemons();
  spawnSync('tmux', ['-L', socket, 'kill-server']);
  sb?.cleanup();
  await browser?.close();
  await server?.cleanup();
});

async function signedIn(path: string, setup?: (c: BrowserContext) => Promise<void>): Promise<Page> {
  const context = await browser.newContext();
  await setup?.(context);
  const page = await context.newPage();
  await page.goto(server.url + path);
  await page.fill('input[name=email]', server.admin.email);
  await page.fill('input[name=password]', server.admin.password);
  await page.click('form button');
  await page.waitForSelector('main h2');
  return page;
}

test('Integrations, instance admin, no project yet: "there is no project yet", not "you are not an admin"', async () => {
  const page = await signedIn('/#/integrations');
  const note = await page.waitForSelector('text=Triggers belong to a project');
  const text = (await note.textContent()) ?? '';
  assert.match(text, 'there is no project yet');
  assert.not.match(text, /not an admin/);
  await page.context().close();
});

test('Schedules: no literal &lt;id&gt;; the form creates a schedule, a bad cron comes back beside its field', async () => {
  const made = await server.api('/api/projects', { method: 'POST', json: { name: 'Nightly', repo: 'acme/nightly' } });
  assert.is(made.status, 201);
  const page = await signedIn('/#/schedules');
  await page.waitForSelector('form.schedule-form');
  assert.not.match((await page.textContent('main')) ?? '', /&lt;|&gt;/);
  await page.fill('form.schedule-form input[name=name]', 'nightly triage');
  await page.fill('form.schedule-form input[name=cron]', 'every night');
  await page.fill('form.schedule-form input[name=timezone]', 'UTC');
  await page.fill('form.schedule-form input[name=skill]', 'triage');
  await page.fill('form.schedule-form input[name=args]', '--label bug');
  await page.click('form.schedule-form button:has-text("Create schedule")');
  await page.waitForSelector('form.schedule-form .field-error[data-field=cron]');
  await page.fill('form.schedule-form input[name=cron]', '0 3 * * 1-5');
  await page.click('form.schedule-form button:has-text("Create schedule")');
  const row = await page.waitForSelector('tr[data-schedule]:has-text("nightly triage")');
  assert.match((await row.textContent()) ?? '', '0 3 * * 1-5');
  const { schedules } = await (await server.api('/api/schedules')).json();
  assert.equal(schedules.map((s: { name: string; args: string[]; skill: string }) => [s.name, s.skill, s.args]), [['nightly triage', 'triage', ['--label', 'bug']]]);
  await page.context().close();
});

test('Runners: an unpaired row gets New pairing code; its code leaves the page once expired; doctor is named; the bell is an SVG', async () => {
  const page = await signedIn('/#/runners', (c) => c.clock.install());
  await page.fill('input[name=name]', 'later-box');
  await page.click('button:has-text("Add runner")');
  await page.waitForSelector('.pairing code.code');
  const row = await page.waitForSelector('tr[data-runner=later-box]');
  assert.not.match((await row.textContent()) ?? '', /--code/, 'no code placeholder in the remedy');
  assert.match((await page.textContent('.doctor-hint')) ?? '', 'svc-runner doctor');
  // A bell drawn with SVG, no emoji (an empty box without an emoji font).
  assert.ok(await page.$('header a.bell svg'));
  assert.not.match((await page.textContent('header a.bell')) ?? '', /\p{Extended_Pictographic}/u);

  await page.clock.fastForward('16:00'); // past the code's 15 minutes
  await page.waitForSelector('.pairing[data-expired=true]');
  assert.is(await page.$('.pairing code.code'), null, 'the expired code is gone');
  assert.not.match((await page.textContent('.pairing')) ?? '', /svc-runner pair/);

  await page.clock.setSystemTime(Date.now()); // back to the server's time, which dates the new code
  await page.click('tr[data-runner=later-box] button:has-text("New pairing code")');
  const fresh = await page.waitForSelector('.pairing code.code');
  assert.match((await fresh.textContent()) ?? '', /^[A-Z2-9]{4}-[A-Z2-9]{4}$/);
  await page.context().close();
});

test('Terminal with a project whose runner runs nothing: says so before Attach, no black box', async () => {
  sb = sandbox();
  sb.writeConfig({ otlp: { enabled: false } });
  const root = join(sb.dir, 'work', 'app');
  mkdirSync(root, { recursive: true });
  execFileSync('git', ['-C', root, 'init', '-q']);
  const made = await (await server.api('/api/runners', { method: 'POST', json: { name: 'quiet-box' } })).json();
  const paired = await runCli(sb, ['pair', '--server', server.url, '--code', made.code, '--no-detect']);
  assert.is(paired.status, 0, paired.stderr);
  const project = await (await server.api('/api/projects', { method: 'POST', json: { name: 'Quiet', repo: 'acme/quiet', runnerId: made.runner.id, rootPath: root } })).json();
  const daemon = startDaemon(sb, { SVC_TMUX_SOCKET: socket });
  await daemon.waitFor(/project watch list updated|connected to/, 20_000);

  const page = await signedIn(`/#/terminal?project=${project.id}`);
  const note = await page.waitForSelector('.nothing-runs', { timeout: 30_000 });
  assert.match((await note.textContent()) ?? '', 'Nothing runs in this project now');
  assert.ok(await page.$eval('.terminal', (el) => (el as HTMLElement).hidden), 'no black box before Attach');
  await page.context().close();
});

test('Sessions and Cost with no data: a space before each inline code ("older than sessions.ingestSince")', async () => {
  // A project on a runner exists (the test above), so the pages explain how sessions arrive.
  for (const path of ['/#/sessions', '/#/cost']) {
    const page = await signedIn(path);
    const how = await page.waitForSelector('[data-empty=no-sessions]');
    const text = ((await how.textContent()) ?? '').replace(/\s+/g, ' ');
    assert.match(text, 'Files older than sessions.ingestSince (set when', path);
    assert.match(text, 'Codex rollout files (~/.codex/sessions/)', path);
    assert.match(text, 'read them with the session.backfill command', path);
    assert.match(text, 'OTEL_LOGS_EXPORTER=otlp and OTEL_EXPORTER_OTLP_ENDPOINT', path);
    await page.context().close();
  }
});

test('Audit banner: how far the chain is verified, and "records" with a real plural', async () => {
  const { records } = await (await server.api('/api/audit?limit=1')).json();
  const head = records[0].seq as number;
  const page = await signedIn('/#/audit');
  const before = await page.getAttribute('.verification', 'data-finished');
  await page.click('.verification button:has-text("Verify now")');
  await page.waitForFunction((b) => {
    const el = document.querySelector('.verification[data-verified=ok]');
    return el !== null && el.getAttribute('data-finished') !== b;
  }, before, { timeout: 60_000 });
  const text = (await page.textContent('.verification')) ?? '';
  assert.not.match(text, /\(s\)/);
  const m = /Chain verified through record #(\d+): (\d+) (records?) checked \(the whole chain\)/.exec(text);
  assert.ok(m, text);
  assert.ok(Number(m![1]) >= head, `through #${m![1]}, head was #${head}`);
  assert.is(Number(m![2]), Number(m![1]), 'the whole chain: every record up to the head');
  assert.is(m![3], Number(m![2]) === 1 ? 'record' : 'records');
  await page.context().close();
});

test.run();

// Caps on the pages (issue #40 part 1; docs/cost.md "Caps"), in a real browser against the real server:
// a project admin sets the caps on the Projects page (saved through PATCH, shown back); an issue that
// passes its cap shows on the Fleet page as paused at its cap with spent / cap and the two action links
// of its notification; Raise opens the action page, whose one button sends slot.resume to the runner.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { Browser, Page } from 'playwright-core';
import { launchBrowser } from '../helpers/browser.ts';
import { startServer } from '../helpers/server.ts';
import type { RunningServer } from '../helpers/server.ts';
import { callAs } from '../helpers/users.ts';
import { otelReq, send, tok, uid } from '../helpers/usage-events.ts';
import { connect, pairRunner } from '../helpers/wsclient.ts';
import type { Client } from '../helpers/wsclient.ts';
import { KEY, makeProject, waitFor } from '../triggers/_harness.ts';

let server: RunningServer;
let browser: Browser;
let ws: Client;
let project = '';
const commands: { name: string; args: Record<string, unknown> }[] = [];

test.before(async () => {
  [server, browser] = await Promise.all([startServer({ admin: true, env: { APP_ENCRYPTION_KEY: KEY, NODE_ENV: 'test' } }), launchBrowser()]);
  const r = await pairRunner(server.api, server.url, 'caps-page');
  project = await makeProject(server, r.runnerId);
  ws = connect(server.url, r.token);
  await ws.next('welcome');
  // The runner: slot.stop and slot.resume done, orchestrator.status: nothing running; anything else refused.
  ws.ws.on('message', (d) => {
    const f = JSON.parse(d.toString());
    if (f.type !== 'command') return;
    commands.push({ name: f.name, args: f.args });
    if (f.name === 'slot.stop' || f.name === 'slot.resume' || f.name === 'orchestrator.status') {
      const data = f.name === 'orchestrator.status' ? { projectId: project, present: false, session: `svc-${project}-orch`, state: 'absent', slots: [] } : { ok: true };
      ws.send({ type: 'result', requestId: f.requestId, ok: true, data });
    } else ws.send({ type: 'result', requestId: f.requestId, ok: false, error: { code: 'failed', message: 'not answered in this test' } });
  });
});
test.after(async () => {
  ws?.ws.close();
  await browser?.close();
  await server?.cleanup();
});

async function signIn(page: Page) {
  await page.fill('input[name=email]', server.admin.email);
  await page.fill('input[name=password]', server.admin.password);
  await page.click('form button');
}

test('Projects: set the caps; Fleet: paused at its cap with spent / cap and Raise / Stop; Raise resumes the slot', async () => {
  const page = await (await browser.newContext({ timezoneId: 'UTC' })).newPage();
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(`${e.message} @ ${page.url()} ${(e.stack ?? '').split('\n').slice(1, 4).join(' ')}`));
  await page.goto(`${server.url}/#/projects?project=${project}`);
  await signIn(page);
  const form = page.locator('form.project-form');
  await form.locator('input[name=perIssueUSD]').fill('1');
  await form.locator('input[name=perRunUSD]').fill('0.5');
  await form.locator('button:has-text("Save")').click();
  await waitFor('the caps saved', async () => {
    const caps = (await callAs(server, `/api/projects/${project}`)).body.caps;
    return caps.perIssueUSD === 1 && caps.perRunUSD === 0.5;
  });
  // A bad value: the field is named beside its input.
  await form.locator('input[name=perIssueUSD]').fill('-3');
  await form.locator('button:has-text("Save")').click();
  const fieldError = form.locator('.field-error[data-field="caps.perIssueUSD"]');
  await fieldError.waitFor();
  assert.match((await fieldError.textContent()) ?? '', /more than 0/);

  // Issue 7 in slot w1 passes its cap: $0.30 a request, four requests.
  const ts = new Date(Date.now() - 60_000).toISOString();
  await send(ws, [{ id: `fleet.${uid()}`, source: `project:${project}`, kind: 'slot.dispatched', ts, payload: { project, type: 'slot.dispatched', slot: 'w1', issue: 7, data: { title: 'Capped work' }, origin: 'runner' } }]);
  for (let i = 0; i < 4; i++) await send(ws, [otelReq('sess-page', 'claude-sonnet-4-5', `req_${uid()}`, tok(0, 20_000), { project, slot: 'w1', issue: '7' })]);
  await waitFor('slot.stop', async () => commands.some((c) => c.name === 'slot.stop'));

  await page.click('a:has-text("Open its fleet")');
  const cap = page.locator('section.slot[data-slot="w1"] .cap[data-cap-state="paused_cap"]');
  await cap.waitFor({ timeout: 10_000 }).catch(async (e) => {
    throw new Error(`${e}\nAPI: ${JSON.stringify((await callAs(server, `/api/projects/${project}/fleet`)).body)}\nURL: ${page.url()}\nERRORS: ${errors.join(' | ')}`);
  });
  assert.match((await cap.textContent()) ?? '', /\$1\.20 spent of a \$1\.00 cap/);
  const links = page.locator('section.slot[data-slot="w1"] a.cap-action');
  await links.nth(1).waitFor();
  assert.equal(await links.allTextContents(), ['Raise the cap by $1.00 and continue', 'Stop this issue']);

  await links.nth(0).click();
  await page.waitForSelector('.card.act h3:has-text("Raise the cap of issue #7")');
  await page.click('.card.act button:has-text("Raise the cap by $1.00 and continue")');
  await page.waitForSelector('.card.act .outcome:has-text("Issue #7 continues with a cap of $2.00")');
  assert.equal(commands.find((c) => c.name === 'slot.resume')?.args, { projectId: project, slot: 'w1', issue: 7 });
  await page.goto(`${server.url}/#/fleet/${project}`);
  await page.locator('section.slot[data-slot="w1"]').waitFor();
  await waitFor('no longer paused on the page', async () => (await page.locator('section.slot[data-slot="w1"] .cap').count()) === 0 || (await page.reload(), false));
  assert.equal(errors, []);
});

test.run();

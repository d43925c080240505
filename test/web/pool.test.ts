// Runner pools on the admin pages in a real browser (issue #37; docs/runner.md "Runner pools"): the
// Runners page edits a runner's tags and shows its reported capacity ("1 of 2 runs"); a project's pool
// section lists the primary runner and the members, adds a runner with the root of its clone (a relative
// root is refused beside the field) and removes one; the schedule form sends the target fields; the Runs page shows a queued pool run, the reason
// the server ended a run with and a retry's link to the run it tries again. The runs and the capacity
// are written into the database while the server is stopped (the dispatcher and the capacity frame are
// other slices' and have their own tests).
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { Browser, Page } from 'playwright-core';
import { openPglite } from '../../functions/lib/db/pglite.ts';
import { openPostgres } from '../../functions/lib/db/postgres.ts';
import { sql } from '../../functions/lib/db/port.ts';
import { launchBrowser } from '../helpers/browser.ts';
import { TEST_DB, serverDbEnv } from '../helpers/db.ts';
import { startServer } from '../helpers/server.ts';
import type { Admin, RunningServer } from '../helpers/server.ts';
import { pairRunner } from '../helpers/wsclient.ts';
import { waitUntil } from '../runner/_harness.ts';

let dbEnv: Record<string, string>;
let drop: () => Promise<void>;
let server: RunningServer;
let admin: Admin;
let browser: Browser;
let projectId = '';
let gpu = '';
let spare = '';
let primary = '';

const api = async (path: string, init: { method?: string; json?: unknown } = {}) => {
  const res = await fetch(server.url + path, {
    method: init.method ?? 'GET',
    headers: { authorization: `Bearer ${admin.token}`, ...(init.json !== undefined ? { 'content-type': 'application/json' } : {}) },
    body: init.json === undefined ? undefined : JSON.stringify(init.json),
  });
  return { status: res.status, body: res.status === 204 ? null : await res.json() };
};

test.before(async () => {
  ({ env: dbEnv, cleanup: drop } = await serverDbEnv());
  const first = await startServer({ admin: true, dbEnv, env: { NODE_ENV: 'test' } });
  admin = first.admin;
  primary = (await pairRunner(first.api, first.url, 'main-box')).runnerId;
  gpu = (await pairRunner(first.api, first.url, 'gpu-box')).runnerId;
  spare = (await pairRunner(first.api, first.url, 'spare-box')).runnerId;
  projectId = (await (await first.api('/api/projects', { method: 'POST', json: { name: 'pooled', repo: 'acme/pooled', runnerId: primary, rootPath: '/srv/pooled' } })).json()).id;
  assert.is((await first.api(`/api/projects/${projectId}/runners/${gpu}`, { method: 'PUT', json: { rootPath: '/home/ci/pooled' } })).status, 201);
  assert.is(await first.stop(), 0);
  const db = TEST_DB === 'postgres' ? await openPostgres(dbEnv.DATABASE_URL, 2) : await openPglite(dbEnv.PGLITE_DATA_DIR);
  try {
    await db.query(sql`update runners set max_concurrent_runs = 2, running_runs = 1, capacity_reported_at = now() where id = ${gpu}`);
    const run = (id: string, state: string, extra: { reason?: string; retryOf?: string; runner?: string | null }) => sql`
      insert into skill_runs (id, runner_id, project_id, skill, args, output, state, created_at, reason, retry_of)
      values (${id}, ${extra.runner ?? null}, ${projectId}, 'review', '[]', 'report', ${state}, now(), ${extra.reason ?? null}, ${extra.retryOf ?? null})`;
    await db.query(run('lost-1', 'failed', { reason: 'runner_lost', runner: gpu }));
    await db.query(run('retry-1', 'queued', { retryOf: 'lost-1' }));
    // On behalf of the instance admin (the dispatcher checks the creator again); no pool runner is online, so it stays queued.
    const [creator] = await db.query<{ id: string }>(sql`select id from users where email = ${admin.email}`);
    await db.query(sql`
      insert into pool_runs (run_id, project_id, source, source_id, source_name, created_by, skill, output, queue_deadline, waiting_reason, retry_of)
      values ('retry-1', ${projectId}, 'schedule', 's1', 'nightly', ${creator.id}, 'review', 'report', now() + interval '30 minutes', '1 runner busy', 'lost-1')`);
  } finally {
    await db.close();
  }
  [server, browser] = await Promise.all([startServer({ dbEnv, env: { NODE_ENV: 'test' } }), launchBrowser()]);
});
test.after(async () => {
  await browser?.close();
  await server?.cleanup();
  await drop?.();
});

async function signedIn(hash: string): Promise<{ page: Page; errors: string[] }> {
  const page = await browser.newPage();
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(e.message));
  page.on('dialog', (d) => void d.accept());
  await page.goto(`${server.url}/${hash}`);
  await page.fill('input[name=email]', admin.email);
  await page.fill('input[name=password]', admin.password);
  await page.click('form button');
  return { page, errors };
}

test('Runners: tags edited in place (stored sorted), capacity "1 of 2 runs"; a bad tag is named beside the field', async () => {
  const { page, errors } = await signedIn('#/runners');
  const row = 'tr[data-runner=gpu-box]';
  await page.waitForSelector(row);
  assert.match((await page.textContent(row)) ?? '', /1 of 2 runs/);
  await page.click(`${row} button:has-text("add tags")`);
  await page.fill(`${row} input[name=tags]`, 'Bad Tag');
  await page.click(`${row} button:has-text("Save tags")`);
  await page.waitForSelector(`${row} .field-error[data-field=tags]`);
  await page.fill(`${row} input[name=tags]`, 'linux, gpu');
  await page.click(`${row} button:has-text("Save tags")`);
  await page.waitForFunction((sel) => /gpu\s*linux/.test(document.querySelector(sel)?.querySelector('.tags')?.textContent ?? ''), row, { timeout: 15_000 });
  assert.equal((await api(`/api/runners/${gpu}`)).body.tags, ['gpu', 'linux']);
  assert.equal(errors, []);
});

test('Projects: the pool lists the primary runner first and the member; add a runner (a relative root is refused), remove one', async () => {
  const { page, errors } = await signedIn(`#/projects?project=${projectId}`);
  await page.waitForSelector('section.pool tr[data-pool-runner=gpu-box]');
  const names = await page.$$eval('section.pool tr[data-pool-runner]', (rows) => rows.map((r) => r.getAttribute('data-pool-runner')));
  assert.equal(names, ['main-box', 'gpu-box']);
  assert.match((await page.textContent('section.pool tr[data-pool-runner=main-box]')) ?? '', /primary/);
  const member = (await page.textContent('section.pool tr[data-pool-runner=gpu-box]')) ?? '';
  assert.match(member, /\/home\/ci\/pooled/);
  assert.match(member, /unchecked/);
  assert.match(member, /1 of 2 runs/);
  await page.selectOption('form.add-pool-runner select[name=runnerId]', spare);
  await page.fill('form.add-pool-runner input[name=rootPath]', 'relative/path');
  await page.click('form.add-pool-runner button');
  await page.waitForSelector('section.pool .field-error[data-field=rootPath]');
  await page.fill('form.add-pool-runner input[name=rootPath]', '/opt/pooled');
  await page.click('form.add-pool-runner button');
  await page.waitForSelector('section.pool tr[data-pool-runner=spare-box]', { timeout: 15_000 });
  assert.equal((await api(`/api/projects/${projectId}/runners`)).body.runners.map((r: { name: string }) => r.name), ['main-box', 'gpu-box', 'spare-box']);
  await page.click('section.pool tr[data-pool-runner=gpu-box] button:has-text("Remove")');
  await page.waitForFunction(() => !document.querySelector('section.pool tr[data-pool-runner=gpu-box]'), null, { timeout: 15_000 });
  assert.equal((await api(`/api/projects/${projectId}/runners`)).body.runners.map((r: { name: string }) => r.name), ['main-box', 'spare-box']);
  assert.equal(errors, []);
});

test('Runs: a queued pool run with its place and why it waits, the reason a run ended with, and a retry linking to the lost run', async () => {
  const { page, errors } = await signedIn('#/runs');
  await page.waitForSelector('tr[data-run=retry-1]');
  const retry = (await page.textContent('tr[data-run=retry-1]')) ?? '';
  assert.match(retry, /queued/);
  assert.match(retry, /retry of\s*lost-1/);
  const listed = (await api(`/api/runs?projectId=${projectId}`)).body.runs.find((r: { id: string }) => r.id === 'retry-1');
  assert.is(listed.queue?.position, 1, JSON.stringify(listed));
  assert.match(retry, new RegExp(`#1 in the queue: ${listed.queue.reason}`));
  assert.match((await page.textContent('tr[data-run=lost-1]')) ?? '', /runner_lost/);
  await page.click('tr[data-run=retry-1] a:has-text("lost-1")');
  await page.waitForSelector('tr[data-run=lost-1] + tr .run-detail', { state: 'attached' }); // opened (empty: the lost run reported nothing)
  assert.equal(errors, []);
});

test('Schedules: the new schedule form sends the target fields (tags to a pool only; a bad tag is named beside the field)', async () => {
  const { page, errors } = await signedIn('#/schedules');
  const form = 'form.schedule-form';
  await page.waitForSelector(`${form} select[name=target]`);
  assert.is(await page.$(`${form} input[name=targetTags]`), null, 'the pool-only fields show with the pool target');
  await page.fill(`${form} input[name=name]`, 'pooled nightly');
  await page.fill(`${form} input[name=cron]`, '0 3 * * *');
  await page.fill(`${form} input[name=skill]`, 'review');
  await page.selectOption(`${form} select[name=target]`, 'pool');
  await page.fill(`${form} input[name=targetTags]`, 'GPU');
  await page.click(`${form} button:has-text("Create schedule")`);
  await page.waitForSelector(`${form} .field-error[data-field=targetTags]`);
  await page.fill(`${form} input[name=targetTags]`, 'linux, gpu');
  await page.fill(`${form} input[name=queueTimeoutMinutes]`, '5');
  await page.check(`${form} input[name=retryOnRunnerLoss]`);
  await page.click(`${form} button:has-text("Create schedule")`);
  let made: Record<string, unknown> | undefined;
  await waitUntil(async () => Boolean((made = (await api(`/api/projects/${projectId}/schedules`)).body.schedules.find((x: { name: string }) => x.name === 'pooled nightly'))), 15_000, 'the schedule created');
  assert.equal([made!.target, made!.targetTags, made!.queueTimeoutMinutes, made!.retryOnRunnerLoss], ['pool', ['gpu', 'linux'], 5, true]);
  assert.equal(errors, []);
});

test.run();

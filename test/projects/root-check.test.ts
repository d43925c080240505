// A project's root path checked on its runner (issue #34 item 3; functions/projects/root-check.ts), with
// the real server and the real runner bundle on sandboxed machines: online, a root that does not exist,
// a plain directory and a root inside or around another project's root are refused 422 naming rootPath;
// a git work tree is accepted and recorded `ok`. Offline, the project is accepted `unchecked`, and the
// runner checks it when it connects: `ok` for a repository, `failed` (shown on the Projects page) for none.
import { execFileSync } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { Browser } from 'playwright-core';
import { launchBrowser } from '../helpers/browser.ts';
import { startServer } from '../helpers/server.ts';
import type { RunningServer } from '../helpers/server.ts';
import { killDaemons, runCli, sandbox, startDaemon, waitUntil } from '../runner/_harness.ts';
import type { Sandbox } from '../runner/_harness.ts';

let server: RunningServer;
let browser: Browser;
const sandboxes: Sandbox[] = [];

test.before(async () => {
  [server, browser] = await Promise.all([startServer({ admin: true }), launchBrowser()]);
});
test.after(async () => {
  await killDaemons();
  for (const sb of sandboxes) sb.cleanup();
  await browser?.close();
  await server?.cleanup();
});

function gitRepo(path: string): string {
  mkdirSync(path, { recursive: true });
  execFileSync('git', ['-C', path, 'init', '-q', '-b', 'main']);
  execFileSync('git', ['-C', path, '-c', 'user.name=t', '-c', 'user.email=t@example.test', 'commit', '-q', '--allow-empty', '-m', 'first']);
  return path;
}

/** A sandboxed machine paired as a runner (not started). */
async function pairedMachine(name: string): Promise<{ sb: Sandbox; runnerId: string }> {
  const sb = sandbox();
  sandboxes.push(sb);
  sb.writeConfig({ otlp: { enabled: false } });
  const made = await (await server.api('/api/runners', { method: 'POST', json: { name } })).json();
  const paired = await runCli(sb, ['pair', '--server', server.url, '--code', made.code, '--no-detect']);
  assert.is(paired.status, 0, paired.stderr);
  return { sb, runnerId: made.runner.id };
}

const create = async (json: Record<string, unknown>) => {
  const res = await server.api('/api/projects', { method: 'POST', json: { repo: 'acme/app', ...json } });
  return { status: res.status, body: await res.json() };
};
const project = async (id: string) => (await server.api(`/api/projects/${id}`)).json();

test('runner online: a missing root, a plain directory and a root inside or around another project → 422 rootPath; a git work tree → 201 checked', async () => {
  const { sb, runnerId } = await pairedMachine('online-box');
  const daemon = startDaemon(sb);
  await daemon.waitFor(/connected to/, 20_000);
  // Online, and its hello (with the roots.check capability) stored.
  await waitUntil(async () => ((await (await server.api(`/api/runners/${runnerId}`)).json()).capabilities ?? []).includes('roots.check'), 20_000, 'the runner online');

  const missing = join(sb.dir, 'srv', 'nothing-here');
  const gone = await create({ name: 'Missing', runnerId, rootPath: missing });
  assert.is(gone.status, 422, JSON.stringify(gone.body));
  assert.ok(gone.body.error.fields.rootPath, 'names rootPath');
  assert.match(gone.body.error.fields.rootPath, missing);

  const plain = join(sb.dir, 'srv', 'plain');
  mkdirSync(plain, { recursive: true });
  const notGit = await create({ name: 'Plain', runnerId, rootPath: plain });
  assert.is(notGit.status, 422);
  assert.match(notGit.body.error.fields.rootPath, `${plain} is not a git repository`);
  assert.match(notGit.body.error.fields.rootPath, `git clone <URL of acme/app> ${plain}`);

  const app = gitRepo(join(sb.dir, 'srv', 'app'));
  const ok = await create({ name: 'App', runnerId, rootPath: app });
  assert.is(ok.status, 201, JSON.stringify(ok.body));
  assert.is(ok.body.rootCheck.state, 'ok');
  assert.is(ok.body.rootCheck.message, null);
  assert.ok(Date.parse(ok.body.rootCheck.checkedAt) > Date.now() - 120_000);

  const nested = gitRepo(join(app, 'vendor', 'lib'));
  for (const rootPath of [nested, join(sb.dir, 'srv')]) {
    const overlap = await create({ name: 'Nested', runnerId, rootPath });
    assert.is(overlap.status, 422, rootPath);
    assert.is(overlap.body.error.code, 'root_overlaps');
    assert.match(overlap.body.error.fields.rootPath, `the root of project App`);
  }

  // A change of root is checked too; nothing was stored by the refusal.
  const moved = await server.api(`/api/projects/${ok.body.id}`, { method: 'PATCH', json: { rootPath: plain } });
  assert.is(moved.status, 422);
  assert.match((await moved.json()).error.fields.rootPath, 'is not a git repository');
  assert.is((await project(ok.body.id)).rootPath, app);
  const names = (await (await server.api('/api/projects')).json()).projects.map((p: { name: string }) => p.name);
  assert.equal(names, ['App']);
});

test('runner offline: accepted "unchecked"; when it connects it checks — ok for a repository, failed (shown on Projects) for none', async () => {
  const { sb, runnerId } = await pairedMachine('offline-box');
  const repo = gitRepo(join(sb.dir, 'work', 'repo'));
  const missing = join(sb.dir, 'work', 'not-cloned');
  const good = await create({ name: 'Later', runnerId, rootPath: repo });
  assert.is(good.status, 201, JSON.stringify(good.body));
  assert.equal(good.body.rootCheck, { state: 'unchecked', message: good.body.rootCheck.message, checkedAt: null });
  assert.match(good.body.rootCheck.message, /offline|not announced/);
  const bad = await create({ name: 'Not cloned', runnerId, rootPath: missing });
  assert.is(bad.status, 201);
  assert.is(bad.body.rootCheck.state, 'unchecked');

  startDaemon(sb);
  await waitUntil(async () => (await project(good.body.id)).rootCheck?.state === 'ok', 30_000, 'the repository checked on connect');
  await waitUntil(async () => (await project(bad.body.id)).rootCheck?.state === 'failed', 30_000, 'the missing root checked on connect');
  const failed = (await project(bad.body.id)).rootCheck;
  assert.match(failed.message, `${missing} is not a git repository`);

  const page = await (await browser.newContext()).newPage();
  await page.goto(server.url + '/#/projects');
  await page.fill('input[name=email]', server.admin.email);
  await page.fill('input[name=password]', server.admin.password);
  await page.click('form button');
  const row = await page.waitForSelector('tr[data-project="Not cloned"] .root-check[data-state=failed]');
  assert.match((await row.textContent()) ?? '', `${missing} is not a git repository`);
  assert.is(await page.textContent('tr[data-project="Later"] .root-check'), 'checked');
  await page.context().close();
});

test.run();

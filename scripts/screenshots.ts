// `npm run screenshots` (not part of CI): every admin page, at a desktop width, saved to
// docs/screenshots/<page>.png for the README's Tour. It starts the real server on a fresh PGlite
// database, pairs the real runner bundle in a sandboxed HOME with a git repository, creates a project
// with a member, a webhook and a slot's events (through `svc-runner emit`), then visits each page in
// Debian's chromium. Needs what the browser tests need (chromium, git, tmux).
import { execFileSync } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { launchBrowser } from '../test/helpers/browser.ts';
import { startServer } from '../test/helpers/server.ts';
import { makeUser } from '../test/helpers/users.ts';
import { killDaemons, runCli, sandbox, startDaemon, waitUntil } from '../test/runner/_harness.ts';

const OUT = join(import.meta.dirname, '..', 'docs', 'screenshots');
const PAGES = ['start', 'projects', 'fleet', 'runners', 'runs', 'sessions', 'cost', 'integrations', 'schedules', 'terminal', 'activity', 'audit', 'settings', 'notifications'];

const server = await startServer({ admin: true });
const browser = await launchBrowser();
const sb = sandbox();
try {
  mkdirSync(OUT, { recursive: true });
  const api = async (path: string, json?: unknown, method = json === undefined ? 'GET' : 'POST') => {
    const res = await server.api(path, { method, json });
    if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${await res.text()}`);
    return res.status === 204 ? null : res.json();
  };
  const page = await (await browser.newContext({ viewport: { width: 1280, height: 800 } })).newPage();
  const shoot = async (name: string, route = name) => {
    await page.goto(`${server.url}/#/${route}`);
    await page.waitForSelector('main h2');
    await page.waitForFunction(() => !document.querySelector('main')?.textContent?.includes('Loading…'), null, { timeout: 20_000 }).catch(() => {});
    await page.screenshot({ path: join(OUT, `${name}.png`), fullPage: true });
    console.log(`docs/screenshots/${name}.png`);
  };
  await page.goto(server.url);
  await page.fill('input[name=email]', server.admin.email);
  await page.fill('input[name=password]', server.admin.password);
  await page.click('form button');
  await page.waitForSelector('header nav');
  // The empty instance first: Getting started as a new admin sees it.
  await shoot('start-empty', 'start');

  // A machine: a git repository, the runner bundle paired with a code, its daemon running.
  const repo = join(sb.home, 'src', 'widget');
  mkdirSync(repo, { recursive: true });
  const git = (...a: string[]) => execFileSync('git', ['-C', repo, ...a], { env: { ...process.env, ...sb.env, GIT_AUTHOR_NAME: 'a', GIT_AUTHOR_EMAIL: 'a@example.test', GIT_COMMITTER_NAME: 'a', GIT_COMMITTER_EMAIL: 'a@example.test' } });
  git('init', '-q', '-b', 'main');
  git('remote', 'add', 'origin', 'https://github.example/acme/widget.git');
  git('commit', '-q', '--allow-empty', '-m', 'first commit');
  sb.writeConfig({ otlp: { enabled: false } });
  const made = await api('/api/runners', { name: 'build-box' });
  const paired = await runCli(sb, ['pair', '--server', server.url, '--code', made.code, '--no-detect']);
  if (paired.status !== 0) throw new Error(paired.stdout + paired.stderr);
  startDaemon(sb, { SVC_EVENTS_POLL_MS: '300' });
  await waitUntil(async () => (await api('/api/runners')).runners.some((r: { status: string }) => r.status === 'online'), 30_000, 'the runner online');
  const project = await api('/api/projects', { name: 'Widget', repo: 'acme/widget', runnerId: made.runner.id, rootPath: repo, budgetUsd: 200 });
  const viewer = await makeUser(server, 'reviewer');
  await api(`/api/projects/${project.id}/members/${viewer.id}`, { role: 'operator' }, 'PUT');
  await api('/api/webhooks', { url: 'https://hooks.example/svc', events: ['pr.opened', 'pr.merged'] });
  for (const args of [
    ['slot.checkpoint', '--slot', '1', '--issue', '7', '--checkpoint', 'pr_open', '--summary', 'ready for review', '--pr', '34', '--url', 'https://github.example/acme/widget/pull/34'],
    ['slot.checkpoint', '--slot', '2', '--issue', '9', '--checkpoint', 'plan_ready', '--summary', 'plan written'],
  ]) {
    const r = await runCli(sb, ['emit', ...args, '--project-root', repo]);
    if (r.status !== 0) throw new Error(r.stdout + r.stderr);
  }
  await waitUntil(async () => (await api(`/api/projects/${project.id}/fleet`)).slots.length === 2, 30_000, 'the slots recorded');
  await api('/api/schedules/audit.verify/run', {});
  await waitUntil(async () => (await api('/api/audit/verification')).verification !== null, 30_000, 'the audit verified');
  await page.goto(`${server.url}/#/projects`);
  await page.reload(); // /api/me now lists the project
  for (const name of PAGES) await shoot(name, name === 'projects' ? `projects?project=${project.id}` : name).catch((e) => console.error(`${name}: ${e.message}`));
} finally {
  await killDaemons();
  sb.cleanup();
  await browser.close();
  await server.cleanup();
}

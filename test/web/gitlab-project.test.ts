// The Projects page for a GitLab project (issue 42; docs/gitlab.md), in a real browser: its Code host card
// says "GitLab token" and that the stored token was checked; with a token GitLab refuses, GitLab's own
// refusal is the card's warning; without a stored token it says the runner's GITLAB_TOKEN is used.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { Browser, Page } from 'playwright-core';
import { launchBrowser } from '../helpers/browser.ts';
import { startServer } from '../helpers/server.ts';
import type { RunningServer } from '../helpers/server.ts';
import { gitlabFake } from '../fakes/gitlab.ts';
import type { GitLabFake } from '../fakes/gitlab.ts';

const PATH = 'acme/platform/app';
let server: RunningServer;
let browser: Browser;
let gl: GitLabFake;
let projectId: string;

test.before(async () => {
  server = await startServer({ admin: true, env: { APP_ENCRYPTION_KEY: Buffer.alloc(32, 4).toString('base64') } });
  browser = await launchBrowser();
  gl = await gitlabFake();
  gl.project(PATH);
  assert.is((await server.api('/api/webhooks/allowlist', { method: 'PUT', json: { allowlist: '127.0.0.1' } })).status, 200);
  const res = await server.api('/api/projects', { method: 'POST', json: { name: 'gl', repo: 'acme/app', runnerId: null, rootPath: null } });
  const body = await res.json();
  projectId = body.id ?? body.project?.id;
});
test.after(async () => {
  await browser?.close();
  await server?.cleanup();
  await gl?.close();
});

async function open(): Promise<Page> {
  const page = await (await browser.newContext()).newPage();
  await page.goto(`${server.url}/#/projects?project=${projectId}`);
  await page.fill('input[name=email]', server.admin.email);
  await page.fill('input[name=password]', server.admin.password);
  await page.click('form button');
  return page;
}
const setHost = async (token?: string) => {
  const r = await server.api(`/api/projects/${projectId}/codehost`, { method: 'PUT', json: { kind: 'gitlab', baseUrl: gl.url, projectPath: PATH, ...(token ? { token } : {}) } });
  assert.is(r.status, 200, await r.clone().text());
};

test('the Code host card: GitLab token checked; GitLab refusing it shown as the warning; the runner GITLAB_TOKEN without one', async () => {
  await setHost(gl.token);
  const page = await open();
  await page.waitForSelector('section.codehost-mode [data-mode="gitlab"]');
  assert.match((await page.textContent('section.codehost-mode')) ?? '', /GitLab token.*stored on the server for acme\/platform\/app.*checked/s);
  assert.is(await page.$('section.codehost-mode [role=alert]'), null);

  await setHost('glpat-wrong-000000000000');
  await page.reload();
  await page.waitForSelector('section.codehost-mode [role=alert]');
  assert.match((await page.textContent('section.codehost-mode [role=alert]')) ?? '', /the GitLab token does not work: GitLab answered HTTP 401.*401 Unauthorized/);

  await setHost();
  await page.reload();
  await page.waitForSelector('section.codehost-mode [data-mode="runner"]');
  assert.match((await page.textContent('section.codehost-mode')) ?? '', /runner token: GITLAB_TOKEN for acme\/platform\/app/);
  assert.not.ok(((await page.content()) ?? '').includes(gl.token), 'the token is never on the page');
});

test("the Code host form: saved from the page, the webhook URL and its secret shown once, the check's result or GitLab's refusal", async () => {
  const page = await open();
  await page.waitForSelector('section.codehost-mode [data-mode]');
  await page.click('details.codehost-edit summary');
  const form = 'form.codehost-form';
  await page.waitForFunction(() => (document.querySelector('form.codehost-form input[name=projectPath]') as HTMLInputElement | null)?.value === 'acme/platform/app');
  await page.fill(`${form} input[name=baseUrl]`, 'not a url');
  await page.click(`${form} button`);
  await page.waitForSelector(`${form} [data-field=baseUrl]`);

  await page.fill(`${form} input[name=baseUrl]`, gl.url);
  await page.fill(`${form} input[name=token]`, gl.token);
  await page.click(`${form} button`);
  await page.waitForSelector(`${form} .webhook-secret`);
  const secret = (await page.textContent(`${form} .webhook-secret`))!.trim();
  const hookUrl = (await page.textContent(`${form} .webhook-url`))!.trim();
  assert.match(hookUrl, new RegExp(`/hooks/gitlab/[A-Za-z0-9_-]+$`));
  assert.is(await page.getAttribute(`${form} .codehost-check`, 'data-ok'), 'true');
  assert.is(await page.inputValue(`${form} input[name=token]`), '', 'the token field is emptied');
  await page.waitForSelector('section.codehost-mode [data-mode="gitlab"]');
  // The secret works: GitLab's hook with it is accepted.
  const hook = await fetch(hookUrl, { method: 'POST', headers: { 'content-type': 'application/json', 'x-gitlab-token': secret, 'x-gitlab-event': 'Issue Hook', 'x-gitlab-event-uuid': 'form-1' }, body: JSON.stringify({ object_kind: 'issue' }) });
  assert.is(hook.status, 202, await hook.clone().text());

  await page.reload();
  await page.click('details.codehost-edit summary');
  await page.waitForSelector(`${form} .webhook-url`);
  assert.is(await page.$(`${form} .webhook-secret`), null, 'the secret is shown once');
  assert.not.ok(((await page.content()) ?? '').includes(gl.token), 'the token is never on the page');

  await page.fill(`${form} input[name=token]`, 'glpat-wrong-000000000000');
  await page.click(`${form} button`);
  await page.waitForSelector(`${form} .codehost-check[data-ok=false]`);
  assert.match((await page.textContent(`${form} .codehost-check`)) ?? '', /GitLab answered HTTP 401.*401 Unauthorized/);
  await page.waitForSelector('section.codehost-mode [role=alert]');
});

test.run();

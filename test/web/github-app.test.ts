// Settings → GitHub App in a real browser against the real server (docs/github-app.md): register an app
// through the form; the webhook URL and secret are shown once in a dialog, and that secret is the one
// the hook verifies with; after closing it, the page never shows the secret again; a bad private key
// is named next to its field; the app's deliveries are listed; rotate shows the new secret once. The API
// URL field round-trips and a bad one is named next to it; Check, against the fake GitHub's App
// endpoints (test/fakes/github-app.ts), shows the installations' accounts, a repository's token
// (installation and expiry, never the token) and GitHub's own error for a key that is not the App's.
// The Projects page shows each project's code-host mode: "App installed on acme/app" for a repository
// the App is installed on, and a warning when neither the App nor a runner's token works.
import { generateKeyPairSync } from 'node:crypto';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { Browser, Page } from 'playwright-core';
import { launchBrowser } from '../helpers/browser.ts';
import { startServer } from '../helpers/server.ts';
import type { RunningServer } from '../helpers/server.ts';
import { postGithub } from '../codehost/_github.ts';
import { githubFake } from '../fakes/github.ts';
import { assertMatchesGitHub } from '../fakes/openapi-check.ts';
import type { GitHubFake } from '../fakes/github.ts';

let browser: Browser;
let server: RunningServer;
let fake: GitHubFake;

test.before(async () => {
  server = await startServer({ admin: true, env: { APP_ENCRYPTION_KEY: Buffer.alloc(32, 3).toString('base64') } });
  browser = await launchBrowser();
  fake = await githubFake();
  // The fake lives on loopback: the outbound address guard reaches it only when the allowlist says so.
  const allow = await server.api('/api/webhooks/allowlist', { method: 'PUT', json: { allowlist: '127.0.0.1' } });
  assert.is(allow.status, 200, await allow.text());
});
test.after(async () => {
  await browser?.close();
  await server?.cleanup();
  await fake?.close();
});

async function open(): Promise<Page> {
  const page = await (await browser.newContext()).newPage();
  page.on('dialog', (d) => void d.accept()); // confirm() of rotate
  await page.goto(`${server.url}/#/settings`);
  await page.fill('input[name=email]', server.admin.email);
  await page.fill('input[name=password]', server.admin.password);
  await page.click('form button');
  await page.waitForSelector('form.add-github-app');
  return page;
}

const copied = async (page: Page, label: string) => (await page.textContent(`dialog.github-app-secret .copyblock:has(.muted:text-is("${label}")) pre`))?.trim() ?? '';

test('register through the form: URL and secret once in a dialog, the secret verifies, and is never shown after', async () => {
  const page = await open();
  // A private key that is not one: named next to its field, nothing registered.
  await page.fill('form.add-github-app input[name=name]', 'acme bot');
  await page.fill('form.add-github-app textarea[name=privateKey]', '-----BEGIN RSA PRIVATE KEY-----\nAAAA\n-----END RSA PRIVATE KEY-----');
  await page.click('form.add-github-app button[type=submit]');
  await page.waitForSelector('.field-error[data-field=privateKey]');
  assert.equal((await server.api('/api/github-apps').then((r) => r.json())).apps, []);

  const pem = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({ type: 'pkcs1', format: 'pem' }).toString();
  await page.fill('form.add-github-app input[name=githubAppId]', '4242');
  await page.fill('form.add-github-app textarea[name=privateKey]', pem);
  await page.click('form.add-github-app button[type=submit]');
  await page.waitForSelector('dialog.github-app-secret[open]');
  const url = await copied(page, 'Webhook URL');
  const secret = await copied(page, 'Webhook secret');
  const [app] = (await server.api('/api/github-apps').then((r) => r.json())).apps;
  assert.equal([app.name, app.githubAppId, app.privateKeySet, app.webhookUrl], ['acme bot', 4242, true, url]);
  assert.match(secret, /^[A-Za-z0-9_-]{43}$/);
  const hook = await postGithub(url, secret, 'issues', { action: 'opened', repository: { full_name: 'acme/widgets' } });
  assert.is(hook.status, 202, 'the secret shown is the one the hook verifies with');

  await page.click('dialog.github-app-secret button[type=submit]');
  await page.waitForSelector('dialog.github-app-secret', { state: 'detached' });
  await page.reload();
  const row = await page.waitForSelector(`tr[data-github-app="${app.id}"]`);
  await page.waitForSelector(`tr[data-github-app="${app.id}"] li[data-delivery]`);
  const text = (await row.textContent()) ?? '';
  assert.match(text, /Webhook secret set/);
  assert.match(text, /Private key set/);
  assert.match(text, /issues\.opened/);
  assert.ok(text.includes(url));
  assert.not.ok((await page.content()).includes(secret), 'the secret is not on the page any more');
  assert.not.ok((await page.content()).includes(pem.split('\n')[1]), 'nor the key');

  // Rotate: a new secret, once, in the dialog; the old one is refused.
  await page.click(`tr[data-github-app="${app.id}"] button:text("Rotate secret")`);
  await page.waitForSelector('dialog.github-app-secret[open]');
  const fresh = await copied(page, 'Webhook secret');
  assert.is.not(fresh, secret);
  assert.is((await postGithub(url, secret, 'ping', { zen: 'x' })).status, 401);
  assert.is((await postGithub(url, fresh, 'ping', { zen: 'x' })).status, 202);
  await page.click('dialog.github-app-secret button[type=submit]');

  // Edit: another App ID, and the stored key removed.
  const edit = `tr[data-github-app="${app.id}"] details.edit-github-app`;
  await page.click(`${edit} summary`);
  await page.fill(`${edit} input[name=githubAppId]`, '5151');
  await page.check(`${edit} input[name=removeKey]`);
  await page.click(`${edit} button[type=submit]`);
  await page.waitForFunction((sel) => document.querySelector(sel)?.textContent?.includes('No private key'), `tr[data-github-app="${app.id}"]`);
  const after = await server.api(`/api/github-apps/${app.id}`).then((r) => r.json());
  assert.equal([after.githubAppId, after.privateKeySet], [5151, false]);
  await page.context().close();
});

test('API URL round-trips and a bad one is named; Check shows the installations, a repository token, and GitHub own error for a wrong key', async () => {
  const gh = fake.app.addApp();
  const installation = fake.app.install(gh.id, 'acme', ['acme/site']);
  fake.repo('acme/site');
  const page = await open();
  const add = 'form.add-github-app';
  await page.fill(`${add} input[name=name]`, 'enterprise bot');
  await page.fill(`${add} input[name=githubAppId]`, String(gh.id));
  await page.fill(`${add} textarea[name=privateKey]`, gh.pem);
  await page.fill(`${add} input[name=apiUrl]`, 'ftp://github.example.com/api/v3');
  await page.click(`${add} button[type=submit]`);
  await page.waitForSelector(`${add} .field-error[data-field=apiUrl]`);
  assert.match((await page.textContent(`${add} .field-error[data-field=apiUrl]`)) ?? '', /https:\/\//);
  const named = async () => (await server.api('/api/github-apps').then((r) => r.json())).apps.filter((a: { name: string }) => a.name === 'enterprise bot');
  assert.is((await named()).length, 0, 'nothing registered');

  await page.fill(`${add} input[name=apiUrl]`, `${fake.url}/`);
  await page.click(`${add} button[type=submit]`);
  await page.waitForSelector('dialog.github-app-secret[open]');
  await page.click('dialog.github-app-secret button[type=submit]');
  const [app] = await named();
  assert.is(app.apiUrl, fake.url, 'stored without the trailing slash');
  const row = `tr[data-github-app="${app.id}"]`;
  await page.waitForSelector(row);
  assert.ok((await page.textContent(row))?.includes(`API ${fake.url}`));
  const edit = `${row} details.edit-github-app`;
  await page.click(`${edit} summary`);
  assert.is(await page.inputValue(`${edit} input[name=apiUrl]`), fake.url, 'the edit form shows the stored API URL');

  // Check: the key works, the App is installed on acme.
  await page.click(`${row} form.check-github-app button[type=submit]`);
  await page.waitForSelector(`${row} .github-app-check[data-ok=true]`);
  assert.match((await page.textContent(`${row} .github-app-check`)) ?? '', /Key works.*Installed on: acme/s);
  // With a repository: its installation and the token's expiry, never the token.
  await page.fill(`${row} form.check-github-app input[name=repo]`, 'acme/site');
  await page.click(`${row} form.check-github-app button[type=submit]`);
  await page.waitForSelector(`${row} .github-app-check-repo`);
  const repoText = (await page.textContent(`${row} .github-app-check-repo`)) ?? '';
  assert.match(repoText, new RegExp(`Token for acme/site: installation ${installation.id}, expires `));
  const minted = fake.app.minted.at(-1)!;
  assert.not.ok((await page.content()).includes(minted.token), 'the token is not on the page');

  // Edit: a bad API URL is named next to its field and changes nothing; then a key that is not the App's.
  await page.fill(`${edit} input[name=apiUrl]`, 'https://user:secret@github.example.com/api/v3');
  await page.click(`${edit} button[type=submit]`);
  await page.waitForSelector(`${edit} .field-error[data-field=apiUrl]`);
  assert.is((await server.api(`/api/github-apps/${app.id}`).then((r) => r.json())).apiUrl, fake.url);
  await page.fill(`${edit} input[name=apiUrl]`, fake.url);
  await page.fill(`${edit} textarea[name=privateKey]`, fake.app.addApp().pem);
  const saved = page.waitForResponse((r) => r.url().endsWith(`/api/github-apps/${app.id}`) && r.request().method() === 'PATCH');
  await page.click(`${edit} button[type=submit]`);
  assert.is((await saved).status(), 200);
  await page.waitForSelector(`${edit} .field-error`, { state: 'detached' });
  await page.fill(`${row} form.check-github-app input[name=repo]`, '');
  await page.click(`${row} form.check-github-app button[type=submit]`);
  await page.waitForSelector(`${row} .github-app-check[data-ok=false]`);
  assert.match((await page.textContent(`${row} .github-app-check`)) ?? '', /A JSON web token could not be decoded/);
  await page.context().close();
});

test("Projects: the code-host mode — App installed on the repository, or a warning when neither the App nor a runner's token works", async () => {
  const gh = fake.app.addApp();
  fake.app.install(gh.id, 'acme', ['acme/appmode']);
  fake.repo('acme/appmode');
  fake.repo('acme/plain');
  const made = await server.api('/api/github-apps', { method: 'POST', json: { name: 'mode bot', githubAppId: gh.id, privateKey: gh.pem, apiUrl: fake.url } });
  assert.is(made.status, 201, await made.clone().text());
  const project = async (name: string, repo: string) => {
    const res = await server.api('/api/projects', { method: 'POST', json: { name, repo, runnerId: null, rootPath: null } });
    assert.is(res.status, 201, await res.clone().text());
    const body = await res.json();
    return (body.id ?? body.project?.id) as string;
  };
  const inApp = await project('appmode', 'acme/appmode');
  const plain = await project('plain', 'acme/plain');
  const page = await open();
  await page.goto(`${server.url}/#/projects?project=${inApp}`);
  const card = await page.waitForSelector('section.codehost-mode [data-mode]');
  assert.is(await card.getAttribute('data-mode'), 'app');
  assert.match((await card.textContent()) ?? '', /App mode\s*App installed on acme\/appmode \(App mode bot, installation \d+\)/);
  await page.goto(`${server.url}/#/projects?project=${plain}`);
  await page.waitForSelector('section.codehost-mode [data-mode="none"]');
  const text = (await page.textContent('section.codehost-mode')) ?? '';
  assert.match(text, /neither works: no App token: .*App mode bot: The GitHub App is not installed on acme\/plain/);
  assert.match(text, /the project has no runner/);
  assert.match((await page.textContent('section.codehost-mode [role=alert]')) ?? '', /no code-host token works for acme\/plain/);
  assert.not.ok((await page.content()).includes(fake.app.minted.at(-1)!.token), 'never the token');
});

test("every request svc made to the fake GitHub and every answer it gave match GitHub's OpenAPI description", () => assertMatchesGitHub());

test.run();

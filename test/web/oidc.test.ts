// Single sign-on in a real browser (issue #38): the sign-in page's "Sign in with …" button → the real
// provider's (oidc-provider) login form → back in the app, signed in as a user made just in time; with
// PASSWORD_SIGNIN=off the password form is folded under "Break-glass sign-in"; when the provider is down
// the button is disabled and says why. The Users page ends a user's sessions.
// needs: chromium
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { Browser } from 'playwright-core';
import { launchBrowser } from '../helpers/browser.ts';
import { CLIENT_ID, CLIENT_SECRET, freePort, startProvider } from '../helpers/oidc.ts';
import type { RealProvider } from '../helpers/oidc.ts';
import { ADMIN_EMAIL, startServer } from '../helpers/server.ts';
import type { RunningServer } from '../helpers/server.ts';

let server: RunningServer;
let op: RealProvider;
let browser: Browser;

test.before(async () => {
  const port = await freePort();
  const publicUrl = `http://127.0.0.1:${port}`;
  op = await startProvider(`${publicUrl}/api/auth/oidc/callback`);
  op.accounts.set('mia', { email: 'mia@example.test', email_verified: true, name: 'Mia Wong', groups: [] });
  [server, browser] = await Promise.all([
    startServer({
      admin: true,
      env: {
        PORT: String(port), PUBLIC_URL: publicUrl, OIDC_ISSUER: op.issuer, OIDC_CLIENT_ID: CLIENT_ID, OIDC_CLIENT_SECRET: CLIENT_SECRET,
        OIDC_BUTTON_TEXT: 'Sign in with Test IdP', PASSWORD_SIGNIN: 'off', BREAK_GLASS_EMAIL: ADMIN_EMAIL,
      },
    }),
    launchBrowser(),
  ]);
});
test.after(async () => {
  await browser?.close();
  await server?.cleanup();
  await op?.stop();
});

test('Sign in with … → the provider\'s login form → back in the app, signed in', async () => {
  const page = await browser.newPage();
  await page.goto(server.url + '/');
  await page.click('a.sso-start:has-text("Sign in with Test IdP")');
  await page.waitForURL((u) => u.origin === op.issuer);
  await page.fill('input[name=login]', 'mia');
  await page.fill('input[name=password]', 'anything');
  await page.click('button[type=submit]');
  await page.waitForURL((u) => u.origin === server.url);
  await page.waitForSelector('header :text("mia@example.test"), nav :text("mia@example.test"), :text-is("mia@example.test")');
  const me = await page.evaluate(async () => (await fetch('/api/me')).json());
  assert.is(me.user.email, 'mia@example.test');
  assert.is(me.user.name, 'Mia Wong');
  await page.close();
});

test('password sign-in off: the form is folded under Break-glass sign-in, and the break-glass admin gets in with it', async () => {
  const page = await browser.newPage();
  await page.goto(server.url + '/');
  await page.waitForSelector('a.sso-start');
  assert.not.ok(await page.isVisible('input[name=email]'), 'hidden until unfolded');
  await page.click('summary:has-text("Break-glass sign-in")');
  await page.fill('input[name=email]', server.admin.email);
  await page.fill('input[name=password]', server.admin.password);
  await page.click('form.password-signin button');
  await page.waitForSelector('nav a[href="#/settings"]');
  // The Users page: Mia (SSO) can have her sessions ended from here.
  await page.goto(server.url + '/#/settings');
  const row = await page.waitForSelector('tr[data-user="mia@example.test"]');
  assert.match((await row.textContent()) ?? '', /SSO/);
  await page.click('tr[data-user="mia@example.test"] button:has-text("End sessions")');
  await page.waitForSelector('[role=status]:has-text("mia@example.test: 1 session ended")');
  await page.close();
});

test('the provider down: the button is disabled and says why', async () => {
  await op.stop();
  try {
    const page = await browser.newPage();
    // A discovery made while the provider was up is kept an hour; a fresh server has none.
    const port = await freePort();
    const s = await startServer({ env: { PORT: String(port), PUBLIC_URL: `http://127.0.0.1:${port}`, OIDC_ISSUER: op.issuer, OIDC_CLIENT_ID: CLIENT_ID, OIDC_BUTTON_TEXT: 'Sign in with Test IdP' } });
    try {
      await page.goto(s.url + '/');
      const problem = await page.waitForSelector('.sso-problem');
      assert.match((await problem.textContent()) ?? '', /Single sign-on cannot be used right now: the identity provider at http:\/\/127\.0\.0\.1:\d+ cannot be used/);
      assert.ok(await page.isDisabled('.sso button'));
      assert.ok(await page.isVisible('input[name=email]'), 'password sign-in stays (PASSWORD_SIGNIN on)');
    } finally {
      await s.cleanup();
    }
    await page.close();
  } finally {
    await op.start();
  }
});

test.run();

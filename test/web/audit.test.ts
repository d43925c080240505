// The Audit page when the chain does NOT verify (issue 16: "a failed verification is impossible to
// miss"): a superuser edits a record behind the append-only trigger, Verify now runs the job, and the
// page shows a red alert naming the first broken record above the records. PostgreSQL only: editing
// behind the trigger needs a second connection while the server runs (PGlite has one owner).
import postgres from 'postgres';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { Browser } from 'playwright-core';
import { launchBrowser } from '../helpers/browser.ts';
import { onlyOn, serverDbEnv } from '../helpers/db.ts';
import { startServer } from '../helpers/server.ts';
import type { RunningServer } from '../helpers/server.ts';

let server: RunningServer;
let browser: Browser;
let dropDb: () => Promise<void>;
let dbEnv: Record<string, string>;

onlyOn('postgres', test, 1, () => {
  test.before(async () => {
    ({ env: dbEnv, cleanup: dropDb } = await serverDbEnv());
    [server, browser] = await Promise.all([startServer({ admin: true, dbEnv, env: { APP_ENCRYPTION_KEY: Buffer.alloc(32, 7).toString('base64') } }), launchBrowser()]);
  });
  test.after(async () => {
    await browser?.close();
    await server?.cleanup();
    await dropDb?.();
  });

  test('a record edited behind the trigger: Verify now turns the banner into a red alert naming the record', async () => {
    for (const name of ['a', 'b', 'c']) assert.is((await server.api('/api/runners', { method: 'POST', json: { name } })).status, 201);
    const { records } = await (await server.api('/api/audit?action=runner.create')).json();
    const seq = records[records.length - 1].seq;
    const db = postgres(dbEnv.DATABASE_URL, { max: 1, onnotice: () => {} });
    try {
      await db.unsafe(`alter table audit_records disable trigger user;
                       update audit_records set actor_label = 'mallory' where seq = ${seq};
                       alter table audit_records enable trigger user;`);
    } finally {
      await db.end();
    }
    const page = await (await browser.newContext()).newPage();
    await page.goto(`${server.url}/#/audit`);
    await page.fill('input[name=email]', server.admin.email);
    await page.fill('input[name=password]', server.admin.password);
    await page.click('form button');
    await page.click('.verification button:has-text("Verify now")');
    const alert = await page.waitForSelector('.verification[data-verified=failed][role=alert]', { timeout: 60_000 });
    const text = (await alert.textContent()) ?? '';
    assert.match(text, /Audit log verification FAILED/);
    assert.match(text, new RegExp(`first broken record: #${seq}`));
    // It comes before the records: the first thing on the page under the heading.
    assert.ok(await page.evaluate(() => document.querySelector('main h2')?.nextElementSibling?.classList.contains('verification')));
    await page.context().close();
  });
});

test.run();

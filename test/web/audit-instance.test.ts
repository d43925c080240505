// The Audit page when the anchor file is another instance's (#33 item 4): the red alert says so in the
// plain sentence, not as tampering. Two servers on two databases share one AUDIT_ANCHOR_PATH; the
// second one's page is read. PostgreSQL only (the behaviour is the same on PGlite: test/audit/instance.test.ts).
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { Browser } from 'playwright-core';
import { launchBrowser } from '../helpers/browser.ts';
import { onlyOn } from '../helpers/db.ts';
import { instance, sharing, verifyNow } from '../audit/_instance.ts';
import type { Instance } from '../audit/_instance.ts';

let browser: Browser;
const made: Instance[] = [];

onlyOn('postgres', test, 1, () => {
  test.before(async () => {
    browser = await launchBrowser();
  });
  test.after(async () => {
    await browser?.close();
    for (const i of made.reverse()) await i.cleanup();
  });

  test('the anchor file of another instance: the alert names both instances, and no record as broken', async () => {
    const a = await instance();
    made.push(a);
    assert.is((await verifyNow(a)).ok, true);
    const b = await sharing(a);
    made.push(b);
    const page = await (await browser.newContext()).newPage();
    await page.goto(`${b.server.url}/#/audit`);
    await page.fill('input[name=email]', b.server.admin.email);
    await page.fill('input[name=password]', b.server.admin.password);
    await page.click('form button');
    await page.click('.verification button:has-text("Verify now")');
    const alert = await page.waitForSelector('.verification[data-verified=failed][data-reason=other_instance][role=alert]', { timeout: 60_000 });
    const text = (await alert.textContent()) ?? '';
    assert.match(text, /the anchor file belongs to instance [0-9a-f-]{36}; this database is instance [0-9a-f-]{36}: a different database, or this one was replaced/);
    assert.not.match(text, /first broken record|changed or removed/);
    await page.context().close();
  });
});

test.run();

// The setup link's reminders (functions/auth/setup.ts), with the clock and the interval injected: the
// same link again while it has time left, a new one (the old still valid until it expires) when it has
// less than one interval left, and silence once a user exists.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { announceSetup, SETUP_TOKEN_MS } from '../../functions/auth/setup.ts';
import { sql } from '../../functions/lib/db/port.ts';
import type { Db } from '../../functions/lib/db/port.ts';
import { createLogger } from '../../functions/lib/log.ts';
import { migratedTestDb } from '../helpers/db.ts';
import { waitUntil } from '../runner/_harness.ts';

let db: Db;
let cleanup: () => Promise<void>;
test.before(async () => {
  ({ db, cleanup } = await migratedTestDb());
});
test.after(async () => cleanup?.());

test('reminders repeat the link, renew it near its expiry, and stop once a user exists', async () => {
  const lines: string[] = [];
  const log = createLogger('info', {}, (l) => lines.push(l));
  let now = Date.now(); // the database's now() drops expired tokens, so the injected clock starts at the real one
  const start = now;
  const reminderMs = 100;
  const stop = announceSetup({ db, log, base: 'https://svc.example.test/tools/', now: () => now, reminderMs });
  try {
    const links = () => lines.map((l) => /open (\S+) to create the first admin/.exec(l)?.[1]).filter(Boolean) as string[];
    await waitUntil(() => links().length >= 1, 20_000, 'the first link');
    const first = links()[0];
    assert.match(first, /^https:\/\/svc\.example\.test\/tools\/#\/setup\?token=[\w-]{43}$/);
    assert.ok(lines[0].includes(`expiresAt=${new Date(start + SETUP_TOKEN_MS).toISOString()}`), lines[0]);
    await waitUntil(() => links().length >= 2, 20_000, 'a reminder');
    assert.is(links()[1], first, 'the same link while it has more than an interval left');

    now += SETUP_TOKEN_MS - reminderMs / 2; // less than one interval left: the next reminder makes a new one
    const seen = links().length;
    await waitUntil(() => links().length > seen && links().at(-1) !== first, 20_000, 'a renewed link');
    const rows = await db.query<{ n: number }>(sql`select count(*)::int as n from setup_tokens`);
    assert.is(rows[0].n, 2, 'the old token stays until it expires');

    await db.query(sql`insert into users (id, email, name, instance_admin) values ('u1', 'u1@example.test', 'U', true)`);
    const after = links().length;
    await new Promise((r) => setTimeout(r, reminderMs * 5)); // several intervals: no reminder comes (an absence has no event to wait on)
    assert.ok(links().length <= after + 1, 'at most the reminder that was already running');
    const settled = links().length;
    await new Promise((r) => setTimeout(r, reminderMs * 5));
    assert.is(links().length, settled, 'silent once a user exists');
  } finally {
    stop();
  }
});

test.run();

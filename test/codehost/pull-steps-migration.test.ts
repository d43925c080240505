// Migration 0038 (a record per pull request, docs/orchestrator.md): approvals audited before it (action
// links since 0036) become steps of their pull request's record, with the checks unknown; from then on
// the trigger on the audit log stores each approval and merge with the pull request's checks at that
// moment, in the audit record's own transaction, and nothing for other records.
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { appendAudit } from '../../functions/audit/audit.ts';
import { loadMigrations, migrate } from '../../functions/lib/db/migrate.ts';
import { sql } from '../../functions/lib/db/port.ts';
import { createLogger } from '../../functions/lib/log.ts';
import { ROOT, openTestDb } from '../helpers/db.ts';

const quiet = createLogger('error');
const actor = { user: { id: 'u1', email: 'u1@example.test' } } as never;

test('0038 makes steps of earlier approvals; then each pr.approve / pr.merged record stores the checks of that moment', async () => {
  const { db, cleanup } = await openTestDb();
  try {
    const all = loadMigrations(join(ROOT, 'sql'));
    await migrate(db, all.filter((m) => m.name < '0038'), quiet);
    await db.query(sql`insert into users (id, email, name) values ('u1', 'u1@example.test', 'U1')`);
    await db.query(sql`insert into projects (id, name, repo) values ('p', 'p', 'a/p')`);
    await db.query(sql`insert into codehost_pulls (project_id, number, state, checks, checks_sha, checks_summary) values ('p', 5, 'open', 'passed', ${'c'.repeat(40)}, '3 passed')`);
    const before = await db.transaction((tx) => appendAudit(tx, { actor, action: 'pr.approve', target: { type: 'project', id: 'p' }, diff: { via: 'link', number: 5 } }));
    await db.transaction((tx) => appendAudit(tx, { actor, action: 'project.update', target: { type: 'project', id: 'p' }, diff: { number: 5 } }));
    await migrate(db, all, quiet);
    const steps = () => db.query<Record<string, unknown>>(sql`select step, via, user_id, audit_seq::int as seq, checks, checks_sha from pull_steps where project_id = 'p' and number = 5 order by audit_seq`);
    assert.equal(await steps(), [{ step: 'approved', via: 'link', user_id: 'u1', seq: before.seq, checks: null, checks_sha: null }]);

    const page = await db.transaction((tx) => appendAudit(tx, { actor, action: 'pr.approve', target: { type: 'project', id: 'p' }, diff: { via: 'page', number: 5 } }));
    await db.query(sql`update codehost_pulls set state = 'merged', checks_sha = ${'d'.repeat(40)} where project_id = 'p' and number = 5`);
    const merged = await db.transaction((tx) => appendAudit(tx, { actor: { label: 'codehost:app' }, action: 'pr.merged', target: { type: 'project', id: 'p' }, diff: { via: 'app', number: 5 } }));
    await db.transaction((tx) => appendAudit(tx, { actor, action: 'pr.approve', target: { type: 'runner', id: 'p' }, diff: { number: 5 } }));
    assert.equal((await steps()).slice(1), [
      { step: 'approved', via: 'page', user_id: 'u1', seq: page.seq, checks: 'passed', checks_sha: 'c'.repeat(40) },
      { step: 'merged', via: 'app', user_id: null, seq: merged.seq, checks: 'passed', checks_sha: 'd'.repeat(40) },
    ]);
    // A failed transaction leaves neither the record nor its step.
    await db.transaction(async (tx) => {
      await appendAudit(tx, { actor, action: 'pr.approve', target: { type: 'project', id: 'p' }, diff: { via: 'api', number: 5 } });
      throw new Error('rolled back');
    }).catch(() => null);
    assert.is((await steps()).length, 3);
  } finally {
    await cleanup();
  }
});

test.run();

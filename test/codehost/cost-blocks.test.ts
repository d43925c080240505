// The codehost.cost_blocks job (functions/codehost/cost-block.ts; docs/cost.md): cost recorded for a pull
// request's session → pr.describe to the project's runner with the block's text; a second change within
// the interval waits (coalesced) and goes out after it; the same text is never sent again; a failed
// answer is recorded and retried; a runner without the pr.describe capability gets nothing. The database
// is real (PGlite or PostgreSQL); the hub is a stub recording commands (the runner's side is
// test/runner/pr-describe.test.ts against the fake GitHub and GitLab).
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { updateCostBlocks } from '../../functions/codehost/cost-block.ts';
import { sql } from '../../functions/lib/db/port.ts';
import type { Db } from '../../functions/lib/db/port.ts';
import type { CommandOutcome } from '../../functions/lib/context.ts';
import { createLogger } from '../../functions/lib/log.ts';
import { migratedTestDb } from '../helpers/db.ts';

let db: Db;
let cleanup: () => Promise<void>;
const sent: { runnerId: string; name: string; args: any }[] = []; // eslint-disable-line @typescript-eslint/no-explicit-any
let answer: CommandOutcome = { status: 'done', data: { changed: true } };
const hub = { command: async (runnerId: string, name: string, args: unknown) => (sent.push({ runnerId, name, args: args as never }), answer) };
const ctx = () => ({ db, hub, log: createLogger('error') }) as never;
let k = 0;
const request = (session: string, model: string, cost: number) =>
  db.query(sql`insert into llm_requests (runner_id, runtime, merge_key, session_id, project_id, model, at, input_tokens, output_tokens, cache_read_tokens, cache_write_5m_tokens, cost_usd)
    values ('r1', 'claude', ${`k${++k}`}, ${session}, 'p1', ${model}, now(), 1000, 100, 10, 5, ${cost})`);

test.before(async () => {
  ({ db, cleanup } = await migratedTestDb());
  await db.query(sql`insert into runners (id, name, paired_at, capabilities) values ('r1', 'r1', now(), ${sql.json(['codehost', 'pr.describe'])}), ('r2', 'r2', now(), ${sql.json(['codehost'])})`);
  await db.query(sql`insert into projects (id, name, repo, runner_id) values ('p1', 'p1', 'a/p1', 'r1'), ('p2', 'p2', 'a/p2', 'r2')`);
  await db.query(sql`insert into codehost_pulls (project_id, number, state, checks, branch) values ('p1', 5, 'open', 'none', 'svc/w1/issue-7'), ('p2', 6, 'open', 'none', 'svc/w1/issue-8')`);
  await db.query(sql`insert into agent_sessions (id, runner_id, runtime, session_id, project_id, branch, models, first_at, last_at)
    values ('s1', 'r1', 'claude', 'cs1', 'p1', 'svc/w1/issue-7', ${sql.json(['claude-sonnet-4-5'])}, now(), now()),
           ('s2', 'r1', 'claude', 'cs2', 'p1', 'svc/w1/issue-7', ${sql.json(['claude-opus-4-1'])}, now(), now()),
           ('s3', 'r2', 'claude', 'cs3', 'p2', 'svc/w1/issue-8', '[]', now(), now())`);
});
test.after(() => cleanup());

test('cost recorded → pr.describe with the block; a second change within a minute waits; unchanged text is not sent', async () => {
  const t0 = new Date('2026-11-28T12:00:00Z');
  assert.equal(await updateCostBlocks(ctx(), t0), { written: 0, unchanged: 0, failed: 0, skipped: 2 }, 'no requests yet: nothing to write');
  await request('cs1', 'claude-sonnet-4-5', 1.5);
  await db.query(sql`insert into llm_requests (runner_id, runtime, merge_key, session_id, project_id, model, at, cost_usd) values ('r2', 'claude', 'x1', 'cs3', 'p2', 'm', now(), 1)`);
  const o1 = await updateCostBlocks(ctx(), t0);
  assert.equal(o1.written, 1);
  assert.is(sent.length, 1, 'p2\'s runner lacks the pr.describe capability');
  assert.equal(sent[0], { runnerId: 'r1', name: 'pr.describe', args: { projectId: 'p1', number: 5, block: sent[0].args.block } });
  assert.match(sent[0].args.block, /^This pull request cost \$1\.50 over 2 agent sessions \(models claude-opus-4-1, claude-sonnet-4-5; tokens 1,000 input, 100 output, 5 cache write, 10 cache read\)\.$/);

  await request('cs2', 'claude-opus-4-1', 2.6);
  await updateCostBlocks(ctx(), new Date(t0.getTime() + 30_000));
  assert.is(sent.length, 1, 'within the minute: coalesced');
  await updateCostBlocks(ctx(), new Date(t0.getTime() + 60_000));
  assert.is(sent.length, 2);
  assert.match(sent[1].args.block, /cost \$4\.10 over 2 agent sessions .*tokens 2,000 input, 200 output, 10 cache write, 20 cache read/);
  await updateCostBlocks(ctx(), new Date(t0.getTime() + 180_000));
  assert.is(sent.length, 2, 'unchanged text: not sent again');
  const [row] = await db.query<{ text: string; error: unknown }>(sql`select text, error from pull_cost_blocks where project_id = 'p1' and number = 5`);
  assert.is(row.text, sent[1].args.block);
  assert.is(row.error, null);
});

test('a failed answer is recorded and retried after the interval', async () => {
  const t1 = new Date('2026-11-28T13:00:00Z');
  await request('cs1', 'claude-sonnet-4-5', 1);
  answer = { status: 'failed', error: { code: 'codehost_403', message: 'refused' } };
  assert.equal((await updateCostBlocks(ctx(), t1)).failed, 1);
  const [row] = await db.query<{ error: { code: string } }>(sql`select error from pull_cost_blocks where project_id = 'p1' and number = 5`);
  assert.is(row.error.code, 'codehost_403');
  answer = { status: 'done', data: { changed: true } };
  const before = sent.length;
  await updateCostBlocks(ctx(), new Date(t1.getTime() + 10_000));
  assert.is(sent.length, before, 'not before the interval');
  assert.equal((await updateCostBlocks(ctx(), new Date(t1.getTime() + 61_000))).written, 1);
  assert.match(sent.at(-1)!.args.block, /cost \$5\.10/);
});

test.run();

// The daemon's transcript ingest (docs/runner.md "Sessions ingest") through the real runner bundle and
// the fake server: incremental reads from offsets.json, partial lines, replaced and truncated files,
// restarts, ingestSince and session.backfill, sessions.enabled=false, corrupt lines, deleted files, and
// both watching modes (@parcel/watcher found through NODE_PATH; the poll when it cannot load).
import { readFileSync, renameSync, statSync, truncateSync, unlinkSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { startFakeServer } from '../runner/_fake-server.ts';
import type { FakeServer } from '../runner/_fake-server.ts';
import { killDaemons, pairedConfig, ROOT, runCli, startDaemon, waitUntil } from '../runner/_harness.ts';
import { append, claudeLine, codexLines, distinct, ingestSandbox, keys, requests } from './_ingest.ts';
import type { IngestBox } from './_ingest.ts';

let fake: FakeServer;
let sb: IngestBox;
const S1 = '11111111-1111-4111-8111-111111111111';
const S2 = '22222222-2222-4222-8222-222222222222';
const POLL = { SVC_INGEST_NO_WATCHER: '1', SVC_INGEST_POLL_MS: '100', SVC_INGEST_HOLD_MS: '200' };

test.before.each(async () => {
  fake = await startFakeServer();
  fake.options.projects = [{ id: 'p1', root: '/work/app' }];
  sb = ingestSandbox();
});
test.after.each(async () => {
  await killDaemons();
  await fake.stop();
  sb.cleanup();
});

// The watch list as runner.json caches it (the welcome frame brings the same).
const config = (extra: Record<string, unknown> = {}) => sb.writeConfig(pairedConfig(fake.url, { sessions: { ingestSince: '2020-01-01T00:00:00Z' }, projects: [{ id: 'p1', root: '/work/app' }], ...extra }));
const tracked = (file: string) => sb.offsets()?.files?.[file];
const waitKeys = (want: string[], what = 'requests') => waitUntil(() => JSON.stringify(keys(fake.received)) === JSON.stringify([...want].sort()), 15_000, () => `${what}: want ${want}, have ${keys(fake.received)}`);

test('a line written in pieces counts once, appended lines are picked up, streaming duplicates are one request, corrupt lines are counted (poll mode)', async () => {
  config();
  const f = sb.claudeFile('-work-app', S1);
  const line = claudeLine({ session: S1, msg: 'msg_a', req: 'req_a', input: 3, output: 25 });
  append(f, line.slice(0, 40));
  const d = startDaemon(sb, POLL);
  await d.waitFor(/polling/);
  await waitUntil(() => tracked(f)?.offset === 0, 10_000, 'the file to be tracked at offset 0 (a partial line waits)');
  assert.is(requests(fake.received).length, 0);
  append(f, line.slice(40));
  await waitKeys(['claude:msg_a:req_a']);
  // The same response's other content blocks, then one with the final output count (a better duplicate).
  append(f, claudeLine({ session: S1, msg: 'msg_a', req: 'req_a', input: 3, output: 25 }) + claudeLine({ session: S1, msg: 'msg_a', req: 'req_a', input: 3, output: 25 }));
  append(f, '{"type":"assistant","message":{"usage":{"input_tokens":1,"output_t\n');
  append(f, claudeLine({ session: S1, msg: 'msg_a', req: 'req_a', input: 3, output: 900 }));
  append(f, claudeLine({ session: S1, msg: 'msg_b', req: 'req_b', input: 1, output: 2 }));
  await waitKeys(['claude:msg_a:req_a', 'claude:msg_b:req_b']);
  await waitUntil(() => distinct(requests(fake.received)).filter((e) => (e.payload as any).key === 'claude:msg_a:req_a').length === 2, 10_000, 'the better duplicate as a second event');
  const a = distinct(requests(fake.received)).filter((e) => (e.payload as any).key === 'claude:msg_a:req_a');
  assert.equal(a.map((e) => (e.payload as any).outputTokens), [25, 900], 'the first read, then the better duplicate (the server keeps the last)');
  assert.is(a[1].source, 'project:p1');
  assert.is((a[1].payload as any).project, 'p1');
  // No prompt or response text leaves the machine.
  assert.not.ok(JSON.stringify(fake.received).includes('private answer'));
  const meta = distinct(fake.received.filter((e) => e.kind === 'session.meta'));
  assert.ok(meta.length >= 1 && meta.length <= 2, `session.meta is throttled: ${meta.length}`);
  assert.equal([(meta[0].payload as any).runtime, (meta[0].payload as any).sessionId, (meta[0].payload as any).project, (meta[0].payload as any).cwd], ['claude', S1, 'p1', '/work/app']);
  await waitUntil(() => tracked(f)?.corrupt === 1, 10_000, 'the corrupt line counted');
  const st = await runCli(sb, ['status']);
  assert.match(st.stdout, /sessions: polling \(@parcel\/watcher not available\); 1 file\(s\), 1 session\(s\), \d+ request\(s\) sent since start, 1 corrupt line\(s\) skipped/);
  assert.is(fake.invalid.length, 0);
});

test('@parcel/watcher is used when it loads: appended lines arrive without the poll', async () => {
  config();
  const f = sb.claudeFile('-work-app', S1);
  append(f, claudeLine({ session: S1, msg: 'm1', req: 'r1' }));
  const d = startDaemon(sb, { NODE_PATH: join(ROOT, 'node_modules'), SVC_INGEST_POLL_MS: '600000', SVC_INGEST_HOLD_MS: '200' });
  await d.waitFor(/watching with @parcel\/watcher/);
  await waitKeys(['claude:m1:r1']);
  append(f, claudeLine({ session: S1, msg: 'm2', req: 'r2' }));
  // A subagent file in a directory created after the start.
  append(join(sb.claude, 'projects', '-work-app', S1, 'subagents', 'agent-x.jsonl'), claudeLine({ session: S1, msg: 'm3', req: 'r3', sidechain: true }));
  await waitKeys(['claude:m1:r1', 'claude:m2:r2', 'claude:m3:r3']);
  const st = await runCli(sb, ['status']);
  assert.match(st.stdout, /sessions: watching with @parcel\/watcher; 2 file\(s\)/);
});

test('a replaced or truncated transcript is read again without counting or sending anything twice', async () => {
  config();
  const f = sb.claudeFile('-work-app', S1);
  const l1 = claudeLine({ session: S1, msg: 'm1', req: 'r1' });
  const l2 = claudeLine({ session: S1, msg: 'm2', req: 'r2' });
  append(f, l1 + l2);
  const x = join(sb.codex, 'sessions', '2026', '01', '20', 'rollout-2026-01-20T10-00-00-x1.jsonl');
  append(x, codexLines('x1', '/work/app', [{ input: 100, cached: 10, output: 5 }, { input: 200, cached: 50, output: 7 }]));
  startDaemon(sb, POLL);
  await waitKeys(['claude:m1:r1', 'claude:m2:r2', 'codex:x1:105', 'codex:x1:312']);
  const before = fake.received.length;
  // Replaced: a new file (new inode) renamed over it, with the old lines and one more.
  const tmp = f + '.tmp';
  writeFileSync(tmp, l1 + l2 + claudeLine({ session: S1, msg: 'm3', req: 'r3' }));
  const oldIno = statSync(f).ino;
  renameSync(tmp, f);
  assert.is.not(statSync(f).ino, oldIno);
  // Truncated: the rollout cut and written again from its start, with one more event.
  truncateSync(x, 0);
  append(x, codexLines('x1', '/work/app', [{ input: 100, cached: 10, output: 5 }, { input: 200, cached: 50, output: 7 }, { input: 300, cached: 0, output: 9 }]));
  await waitKeys(['claude:m1:r1', 'claude:m2:r2', 'claude:m3:r3', 'codex:x1:105', 'codex:x1:312', 'codex:x1:621']);
  await waitUntil(() => tracked(x)?.offset === statSync(x).size && tracked(f)?.offset === statSync(f).size, 10_000, 'both files read to the end');
  const after = requests(fake.received.slice(before)).map((e) => (e.payload as any).key).sort();
  assert.equal(after, ['claude:m3:r3', 'codex:x1:621'], 'only the new requests were sent again');
});

test('a restart resumes from offsets.json: nothing is sent again, lines written while it was down are sent once', async () => {
  config();
  const f = sb.claudeFile('-work-app', S1);
  append(f, claudeLine({ session: S1, msg: 'm1', req: 'r1' }) + claudeLine({ session: S1, msg: 'm2', req: 'r2', sidechain: true }));
  append(f, claudeLine({ session: S1, msg: null, req: 'r-noid' }));
  let d = startDaemon(sb, POLL);
  await waitKeys(['claude:m1:r1', 'claude:m2:r2', `claude:line:${S1}:${JSON.parse(lastLine(f)).uuid}`]);
  await waitUntil(() => tracked(f)?.offset === statSync(f).size, 10_000, 'offsets saved');
  await waitUntil(() => sb.spoolFiles().length === 0, 10_000, 'the spool drained');
  assert.is((await d.kill()).code, 0);
  const before = fake.received.length;
  const ids = new Set(fake.received.map((e) => e.id));
  // While it is down: a streaming duplicate of m1 (dropped) and a new request.
  append(f, claudeLine({ session: S1, msg: 'm1', req: 'r1' }) + claudeLine({ session: S1, msg: 'm4', req: 'r4', at: '2026-01-20T13:00:00.000Z' }));
  d = startDaemon(sb, POLL);
  await waitUntil(() => keys(fake.received).includes('claude:m4:r4'), 15_000, 'the new request');
  await waitUntil(() => tracked(f)?.offset === statSync(f).size, 10_000, 'offsets saved');
  await waitUntil(() => fake.received.slice(before).some((e) => e.kind === 'session.meta'), 10_000, 'the grown session');
  const again = fake.received.slice(before).filter((e) => e.kind === 'llm.request' || e.kind === 'session.meta');
  assert.equal(again.filter((e) => e.kind === 'llm.request').map((e) => (e.payload as any).key), ['claude:m4:r4']);
  assert.ok(again.every((e) => !ids.has(e.id)), 'no event of the first run was sent again');
  assert.is((again.find((e) => e.kind === 'session.meta')!.payload as any).lastAt, '2026-01-20T13:00:00.000Z');
});

function lastLine(f: string): string {
  return readFileSync(f, 'utf8').trim().split('\n').at(-1)!;
}

test('ingestSince skips older transcripts; session.backfill reads the project\'s exactly once', async () => {
  const since = new Date(Date.now() - 3600_000);
  config({ sessions: { ingestSince: since.toISOString() } });
  const old = sb.claudeFile('-work-app', S1);
  append(old, claudeLine({ session: S1, msg: 'old1', req: 'r1' }) + claudeLine({ session: S1, msg: 'old2', req: 'r2' }));
  const other = sb.claudeFile('-work-else', 'aaaaaaaa-0000-4000-8000-000000000000');
  append(other, claudeLine({ session: 'aaaaaaaa-0000-4000-8000-000000000000', msg: 'else1', req: 'e1', cwd: '/work/else' }));
  const past = new Date(since.getTime() - 86_400_000);
  utimesSync(old, past, past);
  utimesSync(other, past, past);
  // A slot worktree's session, new.
  const slot = sb.claudeFile('-work--wt-app-s1', S2);
  append(slot, claudeLine({ session: S2, msg: 'new1', req: 'n1', cwd: '/work/.wt-app-s1', branch: 'svc/s1/issue-7' }));
  startDaemon(sb, POLL);
  const conn = await fake.waitConns(1);
  await waitKeys(['claude:new1:n1']);
  const n1 = requests(fake.received)[0];
  assert.equal([n1.source, (n1.payload as any).project, (n1.payload as any).slot, (n1.payload as any).issue], ['project:p1', 'p1', 's1', '7']);
  assert.is(tracked(old), undefined);
  const r = await conn.command('session.backfill', { projectId: 'p1' }, 20_000);
  assert.is(r.ok, true, JSON.stringify(r));
  assert.equal(r.data, { files: 1, requests: 2, sessions: 1 });
  await waitKeys(['claude:new1:n1', 'claude:old1:r1', 'claude:old2:r2']);
  const again = await conn.command('session.backfill', { projectId: 'p1' }, 20_000);
  assert.equal(again.data, { files: 0, requests: 0, sessions: 0 });
  // `since` later than the other project's file: nothing; and an unknown project is refused.
  const none = await conn.command('session.backfill', { projectId: 'p1', since: new Date().toISOString() }, 20_000);
  assert.equal(none.data, { files: 0, requests: 0, sessions: 0 });
  const unknown = await conn.command('session.backfill', { projectId: 'nope' }, 20_000);
  assert.equal([unknown.ok, unknown.error.code], [false, 'unknown_project']);
  assert.is(distinct(requests(fake.received)).length, 3, 'the other project\'s old file was not read');
});

test('sessions.enabled=false sends nothing and status says so', async () => {
  config({ sessions: { enabled: false } });
  append(sb.claudeFile('-work-app', S1), claudeLine({ session: S1, msg: 'm1', req: 'r1' }));
  const d = startDaemon(sb, POLL);
  await d.waitFor(/session ingest is off/);
  const conn = await fake.waitConns(1);
  await waitUntil(() => fake.received.some((e) => e.kind === 'runner.started'), 10_000, 'runner.started');
  const r = await conn.command('session.backfill', { projectId: 'p1' });
  assert.equal([r.ok, r.error.code], [false, 'sessions_disabled']);
  assert.is(fake.received.filter((e) => e.kind === 'llm.request' || e.kind === 'session.meta').length, 0);
  const st = await runCli(sb, ['status']);
  assert.match(st.stdout, /sessions: off \(sessions\.enabled is false\)/);
});

test('a transcript deleted while it is read is no crash; other files go on being read', async () => {
  config();
  const big = sb.claudeFile('-work-app', S1);
  // ~20 MB, mostly lines without usage (cheap to skip, no events), so the read takes a while.
  const pad = JSON.stringify({ type: 'user', sessionId: S1, message: { role: 'user', content: 'x'.repeat(500) } }) + '\n';
  for (let i = 0; i < 10; i++) append(big, pad.repeat(4000) + claudeLine({ session: S1, msg: `big${i}`, req: `r${i}` }));
  const d = startDaemon(sb, POLL);
  await d.waitFor(/session ingest: /);
  unlinkSync(big);
  const f = sb.claudeFile('-work-app', S2);
  append(f, claudeLine({ session: S2, msg: 'after', req: 'ra' }));
  await waitUntil(() => keys(fake.received).includes('claude:after:ra'), 30_000, 'the other file');
  await waitUntil(() => tracked(big) === undefined, 10_000, 'the deleted file forgotten');
  assert.is(d.proc.exitCode, null, 'the daemon runs on');
  assert.not.match(d.output(), /ingest pass failed/);
});

test("Codex: a subagent rollout's replayed parent history is not sent; a home asking for the priority tier sends fast requests; after a restart too", async () => {
  config();
  writeFileSync(join(sb.codex, 'config.toml'), 'service_tier = "priority"\n');
  const P = '019b0000-0000-7000-8000-0000000000a1';
  const A = '019b0000-0000-7000-8000-0000000000a2';
  append(join(sb.codex, 'sessions', '2026', '01', '20', `rollout-2026-01-20T10-00-00-${P}.jsonl`), codexLines(P, '/work/app', [{ input: 1000, cached: 100, output: 200 }, { input: 500, cached: 50, output: 100 }]));
  const u = (input: number, cached: number, output: number) => ({ input_tokens: input, cached_input_tokens: cached, output_tokens: output, reasoning_output_tokens: 0, total_tokens: input + output });
  const tc = (ts: string, total: number[], last: number[]) => JSON.stringify({ timestamp: ts, type: 'event_msg', payload: { type: 'token_count', info: { total_token_usage: u(total[0]!, total[1]!, total[2]!), last_token_usage: u(last[0]!, last[1]!, last[2]!) } } }) + '\n';
  const sub = join(sb.codex, 'sessions', '2026', '01', '20', `rollout-2026-01-20T10-10-00-${A}.jsonl`);
  append(sub, [
    JSON.stringify({ timestamp: '2026-01-20T10:10:00.010Z', type: 'session_meta', payload: { id: A, cwd: '/work/app', source: { subagent: { thread_spawn: { parent_thread_id: P, depth: 1 } } } } }),
    JSON.stringify({ timestamp: '2026-01-20T10:10:00.011Z', type: 'session_meta', payload: { id: P, cwd: '/work/app' } }),
    JSON.stringify({ timestamp: '2026-01-20T10:10:00.012Z', type: 'turn_context', payload: { cwd: '/work/app', model: 'gpt-5.4' } }),
  ].join('\n') + '\n' + tc('2026-01-20T10:10:00.100Z', [1000, 100, 200], [1000, 100, 200]) + tc('2026-01-20T10:10:00.200Z', [1500, 150, 300], [500, 50, 100]) + tc('2026-01-20T10:11:00.000Z', [1600, 160, 320], [100, 10, 20]));
  let d = startDaemon(sb, POLL);
  await waitKeys([`codex:${P}:1200`, `codex:${P}:1800`, `codex:${A}:1920`]);
  await waitUntil(() => tracked(sub)?.offset === statSync(sub).size, 10_000, 'offsets saved');
  const got = requests(fake.received).map((e) => e.payload as any);
  assert.ok(got.every((r) => r.speed === 'fast'), JSON.stringify(got.map((r) => r.speed)));
  assert.equal(got.find((r) => r.sessionId === A)!.inputTokens, 90, "the subagent's own request: 100 − 10 cached");
  assert.is((await d.kill()).code, 0);
  // Restarted: the replay rule is rebuilt from the file's start, and the next count is sent once.
  append(sub, tc('2026-01-20T10:12:00.000Z', [1650, 165, 330], [50, 5, 10]));
  d = startDaemon(sb, POLL);
  await waitKeys([`codex:${P}:1200`, `codex:${P}:1800`, `codex:${A}:1920`, `codex:${A}:1980`]);
  assert.is(distinct(requests(fake.received)).length, 4, 'nothing sent twice');
});

test.run();

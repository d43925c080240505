// The usage index (runner/usage/scan-index.ts, docs/runner.md "Usage"): a second `svc-runner usage` reads
// only what changed, and whatever it reads or reuses, it prints what a full scan (--rescan) prints. What
// the run did is observed through SVC_USAGE_STATS=1 (one JSON line on stderr) and the index file.
import { appendFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { runCli, sandbox } from '../runner/_harness.ts';
import { writeFixtures } from './_fixtures.ts';
import { FORMAT, readSums } from '../../runner/usage/index-store.ts';

const dir = mkdtempSync(join(tmpdir(), 'svc-usage-index-'));
const fx = writeFixtures(dir);
const sb = sandbox();
const env = { HOME: fx.home, CLAUDE_CONFIG_DIR: fx.claudeConfigDir, CODEX_HOME: fx.codexHome, SVC_USAGE_STATS: '1' };
const indexFile = join(sb.env.XDG_STATE_HOME, 'svc', 'usage-index.json');
test.after(() => {
  rmSync(dir, { recursive: true, force: true });
  sb.cleanup();
});

const projects = join(fx.claudeConfigDir.split(',')[0]!, 'projects', '-work-idx');
const fileA = join(projects, 'aaaaaaaa-1111-4111-8111-111111111111.jsonl');
const fileB = join(projects, 'bbbbbbbb-2222-4222-8222-222222222222.jsonl');
let n = 0;
/** One assistant line of a streamed call (message and request ids are the dedup key). */
function line(session: string, msg: string, out: number, day = '2026-01-23'): string {
  n++;
  const usage = { input_tokens: 10, output_tokens: out, cache_read_input_tokens: 100, cache_creation_input_tokens: 0, service_tier: 'standard' };
  const message = { id: msg, model: 'claude-sonnet-4-5-20250929', type: 'message', role: 'assistant', content: [{ type: 'text', text: `answer ${n}` }], usage };
  return JSON.stringify({ parentUuid: null, isSidechain: false, cwd: '/work/idx', sessionId: session, type: 'assistant', message, requestId: `req-${msg}`, uuid: `idx-${n}`, timestamp: `${day}T10:00:${String(n % 60).padStart(2, '0')}.000Z` }) + '\n';
}

async function usage(...flags: string[]) {
  const r = await runCli(sb, ['usage', 'daily', '--json', ...flags], env);
  assert.is(r.status, 0, r.stderr);
  const stats = JSON.parse(r.stderr.split('\n').find((l) => l.startsWith('{"usageIndex"'))!).usageIndex;
  return { stdout: r.stdout, stats };
}

/** The run from the index prints exactly what a full scan prints (which then rewrites the index: run it after). */
async function indexedEqualsFull(what: string, want: Record<string, unknown>) {
  const got = await usage();
  for (const [k, v] of Object.entries(want)) assert.equal(got.stats[k], v, `${what}: ${k}`);
  const full = await usage('--rescan');
  assert.is(full.stats.mode, 'full');
  assert.is(got.stdout, full.stdout, `${what}: the same report as a full scan`);
  return got;
}

const idx = (s: string) => JSON.parse(s).days.find((d: any) => d.date === '2026-01-23' && d.model === 'claude-sonnet-4-5-20250929');

test('first run: a full scan that writes the index; second run: every file from the index, nothing read', async () => {
  mkdirSync(projects, { recursive: true });
  writeFileSync(fileA, line('aaaaaaaa-1111-4111-8111-111111111111', 'msg-1', 5) + line('aaaaaaaa-1111-4111-8111-111111111111', 'msg-2', 7));
  writeFileSync(fileB, line('bbbbbbbb-2222-4222-8222-222222222222', 'msg-3', 11));
  const first = await usage();
  assert.equal([first.stats.mode, first.stats.reason, first.stats.written], ['full', 'no index', true]);
  assert.is(statSync(indexFile).mode & 0o777, 0o600);
  const doc = JSON.parse(readFileSync(indexFile, 'utf8'));
  assert.is(doc.files[fileA].offset, statSync(fileA).size);
  const lines = JSON.parse(readFileSync(indexFile.replace('.json', '.lines.json'), 'utf8'));
  assert.is(lines.gen, doc.gen);
  assert.is(lines.files[fileA].entries.length, 2);
  const second = await usage();
  assert.equal([second.stats.mode, second.stats.whole, second.stats.appended, second.stats.appendedBytes, second.stats.written, second.stats.result], ['indexed', 0, 0, 0, false, true]);
  assert.ok(second.stats.output, 'the same call again: the stored report');
  assert.is(second.stats.reused, second.stats.files);
  assert.is(second.stdout, first.stdout);
  assert.is(idx(second.stdout).outputTokens, 23);
});

test('appended lines: only the new bytes are read; a duplicate of a line in another file is counted once', async () => {
  const before = statSync(fileA).size;
  // msg-3 is already counted from file B: the same call seen again (as a resumed session copies it).
  const added = line('aaaaaaaa-1111-4111-8111-111111111111', 'msg-4', 13) + line('aaaaaaaa-1111-4111-8111-111111111111', 'msg-3', 11);
  appendFileSync(fileA, added + '{"type":"assistant","message":{"id":"msg-5"'); // and a line still being written
  const got = await indexedEqualsFull('append', { mode: 'indexed', appended: 1, whole: 0, appendedBytes: Buffer.byteLength(added), written: true });
  assert.is(idx(got.stdout).outputTokens, 23 + 13, 'msg-4 added, msg-3 not twice');
  assert.is(JSON.parse(readFileSync(indexFile, 'utf8')).files[fileA].offset, before + Buffer.byteLength(added), 'the partial line is not consumed');
  // The partial line completed: read from the stored offset.
  appendFileSync(fileA, ',"model":"claude-sonnet-4-5-20250929","usage":{"input_tokens":1,"output_tokens":2}},"requestId":"req-msg-5","sessionId":"aaaaaaaa-1111-4111-8111-111111111111","timestamp":"2026-01-23T11:00:00.000Z","uuid":"idx-p"}\n');
  const done = await indexedEqualsFull('completed line', { mode: 'indexed', appended: 1, whole: 0 });
  assert.is(idx(done.stdout).outputTokens, 23 + 13 + 2);
});

test('a truncated file, a file rewritten at the same size and a replaced one (another inode) are read whole', async () => {
  writeFileSync(fileA, line('aaaaaaaa-1111-4111-8111-111111111111', 'msg-1', 5)); // shorter
  const t = await indexedEqualsFull('truncated', { mode: 'indexed', whole: 1, appended: 0 });
  assert.is(idx(t.stdout).outputTokens, 5 + 11);
  const same = readFileSync(fileB, 'utf8').replace('"output_tokens":11', '"output_tokens":19');
  writeFileSync(fileB, same); // the same length, a newer mtime
  const future = new Date(Date.now() + 5_000);
  const { utimesSync } = await import('node:fs');
  utimesSync(fileB, future, future);
  const r = await indexedEqualsFull('rewritten', { mode: 'indexed', whole: 1 });
  assert.is(idx(r.stdout).outputTokens, 5 + 19);
  const tmp = `${fileB}.new`;
  writeFileSync(tmp, line('bbbbbbbb-2222-4222-8222-222222222222', 'msg-3', 11) + line('bbbbbbbb-2222-4222-8222-222222222222', 'msg-9', 1) + line('bbbbbbbb-2222-4222-8222-222222222222', 'msg-10', 1));
  renameSync(tmp, fileB); // rotated: another inode, longer than before
  const rot = await indexedEqualsFull('replaced', { mode: 'indexed', whole: 1, appended: 0 });
  assert.is(idx(rot.stdout).outputTokens, 5 + 11 + 1 + 1);
  rmSync(fileB);
  const gone = await indexedEqualsFull('deleted', { mode: 'indexed', whole: 0, written: true });
  assert.is(idx(gone.stdout).outputTokens, 5);
  assert.not.ok(fileB in JSON.parse(readFileSync(indexFile, 'utf8')).files, 'a deleted file leaves the index');
});

const resultFile = indexFile.replace('.json', '.result.json');
const stored = () => JSON.parse(readFileSync(resultFile, 'utf8'));

const sumsFile = indexFile.replace('.json', '.sums.bin');
/** The stored sums, with each group's costs as a plain array (for assert.equal). */
const storedGroups = () => {
  const g = readSums(indexFile)!.groups;
  return { files: g.files, mids: Array.from(g.mids), rows: g.rows.map((r) => [...r.slice(0, 10), [...r[10]]]) };
};

/**
 * A merged run (no full dedup) stores the same rows, in the same order, as a full scan, and prints the same;
 * one that added to the stored report's sums (`groups`) stores the same sums and message id hashes.
 */
async function mergedEqualsFull(what: string, merged: boolean, groups = false, ...flags: string[]) {
  const got = await usage(...flags);
  assert.is(got.stats.merged === true, merged, `${what}: merged ${JSON.stringify(got.stats)}`);
  assert.is(got.stats.groups === true, groups, `${what}: groups ${JSON.stringify(got.stats)}`);
  const { rows, order } = stored();
  const sums = storedGroups();
  const full = await usage('--rescan', ...flags);
  assert.is(got.stdout, full.stdout, `${what}: the same report as a full scan`);
  if (groups) {
    assert.equal(sums.rows, storedGroups().rows, `${what}: the same sums, each with its costs in the same order`);
    assert.equal([...sums.mids].sort(), [...storedGroups().mids].sort(), `${what}: the same message id hashes`);
    assert.equal(sums.files, storedGroups().files);
    return got;
  }
  assert.equal(rows, stored().rows, `${what}: the same rows in the same order`);
  assert.equal(order.rowFile, stored().order.rowFile, `${what}: the same file order`);
  assert.equal([...order.mids].sort(), [...stored().order.mids].sort(), `${what}: the same message ids`);
  return got;
}

test('append of new message ids only: merged into the stored result without the full dedup, equal to a full scan', async () => {
  const a = 'aaaaaaaa-1111-4111-8111-111111111111', b = 'bbbbbbbb-2222-4222-8222-222222222222';
  appendFileSync(fileB, line(b, 'seed-b', 1)); // (deleted by the test before)
  appendFileSync(fileA, line(a, 'seed-a', 1));
  // An append with a file read whole (here a new one) is never merged.
  assert.equal((await usage()).stats.fallback, 'a file read whole');
  await usage('--rescan');
  await usage('--since', '2026-01-01'); // another report is stored last: the rows are merged, not the sums
  // New ids in both files, a duplicate among the new lines across files (the first in file order stays).
  appendFileSync(fileA, line(a, 'new-1', 3, '2026-01-22') + line(a, 'new-2', 4));
  appendFileSync(fileB, line(b, 'new-2', 4) + line(b, 'new-3', 6, '2026-01-24'));
  const got = await mergedEqualsFull('first append', true);
  assert.equal([got.stats.appended, got.stats.whole, got.stats.mode], [2, 0, 'indexed']);
  // Several appends in a row: the journal grows, each merged run still equals a full scan (rows in file order);
  // with the same report stored last, its sums take the new requests (new days, so no order to keep).
  for (let k = 0; k < 4; k++) {
    await usage(...(k < 2 ? ['--since', '2026-01-01'] : [])); // the same call: the stored report
    appendFileSync(k % 2 ? fileB : fileA, line(k % 2 ? b : a, `row-${k}`, 1 + k, `2026-02-0${k + 1}`));
    await mergedEqualsFull(`append ${k}`, true, k >= 2);
  }
  // Three merged runs without a rescan between them; then lines from the journal must give the full path's answer.
  for (let k = 0; k < 3; k++) {
    appendFileSync(fileA, line(a, `chain-${k}`, 2 + k));
    assert.ok((await usage()).stats.merged, `chain ${k}`);
  }
  assert.ok(JSON.parse(readFileSync(indexFile, 'utf8')).journal > 0, 'the journal carries the appended lines');
  appendFileSync(fileB, line(b, 'chain-0', 2)); // a known id: the full dedup, on the stored lines and the journal
  const fallback = await usage();
  assert.equal([fallback.stats.merged, fallback.stats.fallback, fallback.stats.mode], [undefined, 'known message id appended', 'indexed']);
  assert.is(fallback.stdout, (await usage('--rescan')).stdout);
});

test('sums after several appends, also to an earlier transcript of a day: equal to a full scan; an id hash known or torn sums: no sums', async () => {
  const a = 'aaaaaaaa-1111-4111-8111-111111111111', b = 'bbbbbbbb-2222-4222-8222-222222222222';
  await usage('--rescan');
  for (let k = 0; k < 3; k++) {
    appendFileSync(fileB, line(b, `sum-b-${k}`, 2 + k)); // the last transcript: added to 2026-01-23's sum in order
    assert.ok((await usage()).stats.groups, `sum ${k}`);
  }
  appendFileSync(fileB, line(b, 'sum-b-3', 5, '2026-03-01'));
  await mergedEqualsFull('after four sums', true, true);
  // fileA comes before fileB, and 2026-01-23 holds fileB's requests: the new costs go before those (costs that
  // differ in their last bits, so that summing them in another order would change the day's cost).
  appendFileSync(fileB, line(b, 'sum-b-5', 1_000_003) + line(b, 'sum-b-6', 7));
  await mergedEqualsFull('a later transcript', true, true);
  for (let k = 0; k < 3; k++) appendFileSync(fileA, line(a, `sum-a-${k}`, 333_331 + k));
  await mergedEqualsFull('an earlier transcript of the same day', true, true);
  // Sums cut short (a torn write): no sums, the rows are merged or read whole, never a wrong report.
  appendFileSync(fileB, line(b, 'sum-b-4', 4, '2026-03-02'));
  writeFileSync(sumsFile, readFileSync(sumsFile).subarray(0, 200));
  await indexedEqualsFull('torn sums', { mode: 'indexed', groups: undefined });
  // Cut in the costs or ids (the header whole): no sums either.
  await usage();
  appendFileSync(fileB, line(b, 'sum-b-7', 4, '2026-03-02'));
  writeFileSync(sumsFile, readFileSync(sumsFile).subarray(0, -4));
  await indexedEqualsFull('sums cut in their ids', { mode: 'indexed', groups: undefined });
  // A known id is seen through its hash: the full dedup.
  appendFileSync(fileB, line(b, 'sum-b-4', 4, '2026-03-02'));
  await usage();
  appendFileSync(fileA, line(a, 'sum-b-4', 4, '2026-03-02'));
  await indexedEqualsFull('known id, with sums stored', { mode: 'indexed', merged: undefined, fallback: 'known message id appended' });
});

test('a transcript read whole is listed in scan order in the meta file: the next append still adds to the sums', async () => {
  await usage('--rescan');
  // A new transcript that sorts before the others, read whole while they come from the index.
  const s0 = '00000000-3333-4333-8333-333333333333';
  const first = join(projects, `${s0}.jsonl`);
  writeFileSync(first, line(s0, 'order-0', 3));
  assert.is((await usage()).stats.whole, 1);
  const doc = JSON.parse(readFileSync(indexFile, 'utf8'));
  const claude = Object.keys(doc.files).filter((f) => doc.files[f].runtime === 'claude');
  assert.equal(claude, [...claude].sort(), 'the transcripts in scan order');
  appendFileSync(first, line(s0, 'order-1', 4));
  await mergedEqualsFull('an append after a whole read', true, true);
  rmSync(first);
});

test('an appended duplicate of a line in another file takes the full dedup, and a torn journal is cut', async () => {
  await usage('--rescan');
  appendFileSync(fileA, line('aaaaaaaa-1111-4111-8111-111111111111', 'after-1', 9));
  assert.ok((await usage()).stats.merged);
  const journal = indexFile.replace('.json', '.journal.jsonl');
  appendFileSync(journal, '["garbage of a run that did not finish"'); // past the meta file's length: ignored, then cut
  appendFileSync(fileA, line('aaaaaaaa-1111-4111-8111-111111111111', 'after-2', 10));
  await mergedEqualsFull('after a torn journal', true, true);
  appendFileSync(fileA, line('aaaaaaaa-1111-4111-8111-111111111111', 'after-3', 10));
  assert.ok((await usage()).stats.merged);
  appendFileSync(fileB, line('bbbbbbbb-2222-4222-8222-222222222222', 'after-1', 9)); // the same call, in the other file
  const got = await indexedEqualsFull('known id', { mode: 'indexed', fallback: 'known message id appended' });
  assert.not.ok(got.stats.merged);
});

test('an append to a Codex rollout (alone or with a Claude append of new ids) takes the current path, equal to a full scan', async () => {
  await usage('--rescan');
  const x3 = join(fx.codexHome, 'sessions', '2026', '01', '22', 'rollout-2026-01-22T08-00-00-019b0000-0000-7000-8000-000000000003.jsonl');
  const u = (a: number[]) => ({ input_tokens: a[0], cached_input_tokens: a[1], output_tokens: a[2], reasoning_output_tokens: a[3], total_tokens: a[0]! + a[2]! });
  const tc = (ts: string, total: number[], last: number[]) => JSON.stringify({ timestamp: ts, type: 'event_msg', payload: { type: 'token_count', info: { total_token_usage: u(total), last_token_usage: u(last), model_context_window: 272_000 } } }) + '\n';
  appendFileSync(x3, tc('2026-01-22T08:05:00.000Z', [460_000, 101_000, 21_000, 5_100], [10_000, 1_000, 1_000, 100]));
  appendFileSync(fileA, line('aaaaaaaa-1111-4111-8111-111111111111', 'with-codex', 3));
  const both = await indexedEqualsFull('codex and claude', { mode: 'indexed' });
  assert.not.ok(both.stats.merged);
  appendFileSync(x3, tc('2026-01-22T08:06:00.000Z', [470_000, 102_000, 22_000, 5_200], [10_000, 1_000, 1_000, 100]));
  const codex = await indexedEqualsFull('codex alone', { mode: 'indexed' });
  assert.not.ok(codex.stats.merged);
  assert.ok(codex.stdout.includes('"2026-01-22"'));
});

test('a corrupted, malformed or foreign index means a full scan; --rescan forces one', async () => {
  const want = (await usage('--rescan')).stdout;
  for (const [text, reason] of [['{"format":1,"build":', 'index unreadable'], ['{"format":2,"build":', 'index unreadable'], [`{"format":${FORMAT},"build":"x","gen":"g","linesGen":"g","journal":0,"files":{}}`, 'index of another build'], [null, 'index unreadable']] as const) {
    if (text === null) {
      const doc = JSON.parse(readFileSync(indexFile, 'utf8'));
      doc.files[fileA].offset = -1;
      writeFileSync(indexFile, JSON.stringify(doc));
    } else writeFileSync(indexFile, text);
    const got = await usage();
    assert.equal([got.stats.mode, got.stats.reason, got.stats.written], ['full', reason, true], reason);
    assert.is(got.stdout, want);
  }
  // An index of the format before (this build's, otherwise whole): a full scan, and the sums file that
  // format kept (usage-index.sums.json, not read any more) is removed with it.
  const doc = JSON.parse(readFileSync(indexFile, 'utf8'));
  writeFileSync(indexFile, JSON.stringify({ ...doc, format: FORMAT - 1 }));
  const oldSums = indexFile.replace('.json', '.sums.json');
  writeFileSync(oldSums, '{"gen":"g","key":"k","groups":{}}');
  const older = await usage();
  assert.equal([older.stats.mode, older.stats.reason], ['full', 'index unreadable']);
  assert.is(older.stdout, want);
  assert.not.ok(existsSync(oldSums), 'the older format\'s sums file is removed');
  // A lines file of another generation (a crash between the writes): a full scan, not a mix.
  await usage('--rescan');
  appendFileSync(fileA, line('aaaaaaaa-1111-4111-8111-111111111111', 'msg-1', 1)); // a known message id: so the lines are needed
  const linesFile = indexFile.replace('.json', '.lines.json');
  writeFileSync(linesFile, JSON.stringify({ ...JSON.parse(readFileSync(linesFile, 'utf8')), gen: 'other' }));
  const mixed = await usage();
  assert.equal([mixed.stats.mode, mixed.stats.reason], ['full', 'index unreadable']);
  assert.is(mixed.stdout, (await usage('--rescan')).stdout);
  const forced = await usage('--rescan');
  assert.equal([forced.stats.mode, forced.stats.reason, forced.stats.reused], ['full', '--rescan', 0]);
  const bad = await runCli(sb, ['usage', 'daily', '--rescan=yes'], env);
  assert.is(bad.status, 2);
});

test.run();

// The counting rules one by one (docs/cost.md): ccusage's Claude line filter and dedup, the Codex
// token_count mapping, incremental reading from byte offsets, and the price formula.
import { appendFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { DEFAULT_PRICES, costUsd, findPrice } from '../../protocol/prices.ts';
import { llmRequestPayload } from '../../protocol/usage.ts';
import { ClaudeDedup, fileContext, hasRejectedNull, parseClaudeLine, parseTimestamp } from '../../runner/runtimes/claude/transcript.ts';
import type { ClaudeEntry } from '../../runner/runtimes/claude/transcript.ts';
import type { Profile } from '../../runner/config.ts';
import { newCodexFileState, parseCodexLine } from '../../runner/runtimes/codex/transcript.ts';
import { dayIn } from '../../runner/usage/command.ts';
import { codexFiles, configRequestsFast, usageDirs } from '../../runner/usage/dirs.ts';
import { claudeRequest, codexRequest, detectCodexReplaySync, readClaudeFile, readCodexFile } from '../../runner/usage/scan.ts';
import type { CodexEvent } from '../../runner/runtimes/codex/transcript.ts';

const dir = mkdtempSync(join(tmpdir(), 'svc-usage-rules-'));
test.after(() => rmSync(dir, { recursive: true, force: true }));
const ctx = fileContext('/h/.claude/projects/-app/s1.jsonl');

function line(o: Record<string, unknown> = {}, usage: Record<string, unknown> = {}, message: Record<string, unknown> = {}): Record<string, unknown> {
  return { type: 'assistant', sessionId: 's1', version: '2.1.12', timestamp: '2026-01-20T12:00:00.000Z', requestId: 'req_1', message: { id: 'msg_1', model: 'claude-opus-4-5', usage: { input_tokens: 1, output_tokens: 2, cache_read_input_tokens: 3, cache_creation_input_tokens: 4, ...usage }, ...message }, ...o };
}
const parse = (o: unknown) => parseClaudeLine(Buffer.from(typeof o === 'string' ? o : JSON.stringify(o)), 0, ctx);
const entry = (o: Parameters<typeof line>[0] = {}, u: Parameters<typeof line>[1] = {}, m: Parameters<typeof line>[2] = {}): ClaudeEntry => {
  const v = parse(line(o, u, m));
  if (!('entry' in v)) throw new Error(`not counted: ${JSON.stringify(v)}`);
  return v.entry;
};

test('Claude line filter: what ccusage drops', () => {
  assert.ok('entry' in parse(line()));
  assert.equal(parse({ type: 'user', message: { content: 'hi' } }), { skip: 'no-usage' });
  assert.equal(parse('{"type":"assistant","message":{"usage":{"input_tokens":1,'), { corrupt: true });
  for (const k of ['requestId', 'sessionId', 'costUSD', 'version']) assert.equal(parse(line({ [k]: null })), { skip: 'null-field' }, k);
  assert.equal(parse(line({}, { speed: null })), { skip: 'null-field' });
  assert.equal(parse(line({}, {}, { model: null })), { skip: 'null-field' });
  assert.equal(parse(line({ version: 'dev' })), { skip: 'invalid' });
  assert.ok('entry' in parse(line({ version: '2.1.12-beta' })));
  for (const k of ['requestId', 'sessionId']) assert.equal(parse(line({ [k]: '' })), { skip: 'invalid' }, k);
  assert.equal(parse(line({}, {}, { id: '' })), { skip: 'invalid' });
  assert.equal(parse(line({ timestamp: '2026-01-20T12:00:00.123456Z' })), { skip: 'timestamp' });
  assert.equal(parse(line({}, { speed: 'priority' })), { skip: 'shape' });
  assert.equal(parse(line({}, { input_tokens: -1 })), { skip: 'shape' });
  // content: null is allowed; only the listed keys are checked.
  assert.ok('entry' in parse(line({}, {}, { content: null })));
  assert.ok(hasRejectedNull('{"a":{"id":null}}'));
  assert.not.ok(hasRejectedNull('{"content":null}'));
});

test('Claude: <synthetic> has no model, fast mode reports <model>-fast, the 5 m / 1 h split, a flat count is 5 m', () => {
  assert.is(entry({}, {}, { model: '<synthetic>' }).model, null);
  const fast = entry({}, { speed: 'fast' }, { model: 'claude-opus-4-6' });
  assert.is(fast.model, 'claude-opus-4-6-fast');
  assert.is(fast.priceModel, 'claude-opus-4-6');
  const split = entry({}, { cache_creation: { ephemeral_5m_input_tokens: 10, ephemeral_1h_input_tokens: 20 } });
  assert.equal([split.cacheWrite5mTokens, split.cacheWrite1hTokens], [10, 20]);
  const flat = entry();
  assert.equal([flat.cacheWrite5mTokens, flat.cacheWrite1hTokens], [4, 0]);
});

test('Claude: a subagent progress line in the parent counts as the subagent message it carries', () => {
  const inner = line({ isSidechain: true, requestId: 'req_sub' }, {}, { id: 'msg_sub' });
  const v = parse({ type: 'progress', sessionId: 's1', timestamp: '2026-01-20T12:00:01.000Z', data: { type: 'agent_progress', message: inner } });
  assert.ok('entry' in v && v.entry.progress && v.entry.sidechain && v.entry.messageId === 'msg_sub');
  // …and dedups against the subagent file's line.
  const d = new ClaudeDedup(DEFAULT_PRICES);
  d.add((v as { entry: ClaudeEntry }).entry);
  assert.is(d.add(entry({ isSidechain: true, requestId: 'req_sub' }, {}, { id: 'msg_sub' })).kind, 'dropped');
  assert.is(d.entries.length, 1);
});

test('Claude dedup: streaming duplicates, the better line, /btw replays, lines without message.id', () => {
  const d = new ClaudeDedup(DEFAULT_PRICES);
  assert.is(d.add(entry()).kind, 'added');
  assert.is(d.add(entry()).kind, 'dropped');
  // More tokens for the same message.id + requestId: replaces.
  assert.is(d.add(entry({}, { output_tokens: 50 })).kind, 'replaced');
  assert.is(d.entries[0].outputTokens, 50);
  // A sidechain replay of the parent's message with a new requestId: the parent stays.
  assert.is(d.add(entry({ isSidechain: true, requestId: 'req_btw' }, { cache_read_input_tokens: 90_000 })).kind, 'dropped');
  // The same message.id with another requestId and no sidechain: a different request.
  assert.is(d.add(entry({ requestId: 'req_2' })).kind, 'added');
  // A parent line arriving after its sidechain replay replaces it.
  const e = new ClaudeDedup(DEFAULT_PRICES);
  e.add(entry({ isSidechain: true, requestId: 'req_btw' }, { cache_read_input_tokens: 90_000 }));
  assert.is(e.add(entry()).kind, 'replaced');
  assert.is(e.entries[0].sidechain, false);
  // Without message.id: never deduplicated.
  const f = new ClaudeDedup(DEFAULT_PRICES);
  const noId = { ...entry(), messageId: null };
  f.add(noId);
  f.add(noId);
  assert.is(f.entries.length, 2);
  // Speed over no speed when tokens and cost tie.
  const g = new ClaudeDedup(DEFAULT_PRICES);
  g.add(entry());
  assert.is(g.add(entry({}, { speed: 'standard' })).kind, 'replaced');
});

test('Claude paths: subagent files belong to the parent session; the request record validates', () => {
  assert.equal(fileContext('/h/.claude/projects/-app/S/subagents/agent-a1.jsonl'), { sessionId: 'S', projectDir: '-app', file: '/h/.claude/projects/-app/S/subagents/agent-a1.jsonl' });
  const r = claudeRequest(entry({ uuid: 'u1' }) as ClaudeEntry & { priceModel: string });
  assert.is(r.key, 'claude:msg_1:req_1');
  assert.ok(llmRequestPayload.safeParse(r).success);
  assert.is(parseTimestamp('2026-01-20T12:00:00+02:00'), Date.UTC(2026, 0, 20, 10));
});

// parseTimestamp as it was written first, with ccusage's regular expression: the hand-written one must agree.
function parseTimestampRegex(v: string): number | null {
  const m = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:\.(\d{3}))?(Z|[+-]\d{2}:\d{2})$/.exec(v);
  if (!m) return null;
  const [, y, mo, d, h, mi, s, ms, tz] = m;
  const dim = [31, +y % 4 === 0 && (+y % 100 !== 0 || +y % 400 === 0) ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];
  if (+h > 23 || +mi > 59 || +s > 59 || +mo < 1 || +mo > 12 || +d < 1 || +d > dim[+mo - 1]!) return null;
  let off = 0;
  if (tz !== 'Z') {
    const oh = +tz.slice(1, 3), om = +tz.slice(4, 6);
    if (oh > 23 || om > 59) return null;
    off = (tz[0] === '-' ? -1 : 1) * (oh * 60 + om) * 60_000;
  }
  return Date.UTC(+y, +mo - 1, +d, +h, +mi, +s, ms ? +ms : 0) - off;
}

test('parseTimestamp: the same answer as the regular expression on every shape and every one-character change', () => {
  const valid = ['2026-01-20T12:00:00Z', '2026-01-20T12:00:00.123Z', '2026-01-20T12:00:00+02:00', '2026-01-20T12:00:00.999-09:30', '2024-02-29T23:59:59.000+14:00', '0050-12-31T00:00:00Z', '2100-02-28T01:02:03.004Z'];
  const invalid = ['', '2026-01-20', '2026-01-20T12:00:00', '2026-01-20T12:00:00.12Z', '2026-01-20T12:00:00.1234Z', '2026-01-20T12:00:00z', '2026-01-20 12:00:00Z', '2026-02-29T00:00:00Z', '2100-02-29T00:00:00Z', '2026-13-01T00:00:00Z', '2026-00-10T00:00:00Z', '2026-01-00T00:00:00Z', '2026-01-20T24:00:00Z', '2026-01-20T12:60:00Z', '2026-01-20T12:00:60Z', '2026-01-20T12:00:00+24:00', '2026-01-20T12:00:00+02:60', '2026-01-20T12:00:00+0200', '2026-01-20T12:00:00Z\n', '２026-01-20T12:00:00Z', '2026-01-20T12:00:00.١٢٣Z'];
  const chars = ['0', '1', '2', '5', '9', '-', ':', '.', 'T', 'Z', '+', ' ', 'a', '/', '٣'];
  let compared = 0;
  for (const v of [...valid, ...invalid]) {
    const shapes = [v, v.slice(0, -1), `${v}0`, `0${v}`];
    for (let i = 0; i < v.length; i++) for (const c of chars) shapes.push(v.slice(0, i) + c + v.slice(i + 1));
    for (const x of shapes) {
      assert.is(parseTimestamp(x), parseTimestampRegex(x), x);
      compared++;
    }
  }
  for (const v of valid) assert.ok(parseTimestamp(v) !== null, v);
  for (const v of invalid) assert.is(parseTimestamp(v), null, v);
  assert.ok(compared > 5000);
});

test('dayIn: without --tz, the day in the process zone (TZ) is the day --tz gives for that zone', () => {
  const before = process.env.TZ;
  try {
    // Zones with daylight saving, a half-hour offset, a 30-minute DST shift and midnight inside a UTC hour.
    for (const zone of ['UTC', 'Europe/Berlin', 'America/St_Johns', 'Australia/Lord_Howe', 'Asia/Kolkata', 'Pacific/Chatham', 'America/Sao_Paulo']) {
      process.env.TZ = zone;
      const local = dayIn(undefined), named = dayIn(zone);
      for (let ms = Date.UTC(2025, 0, 1); ms < Date.UTC(2026, 11, 31); ms += 7 * 60_000 + 13_000) assert.is(local(ms), named(ms), `${zone} ${new Date(ms).toISOString()}`);
    }
  } finally {
    if (before === undefined) delete process.env.TZ;
    else process.env.TZ = before;
  }
});

const tc = (total: number[] | null, last: number[] | null, ts = '2026-01-20T10:00:00.000Z') => {
  const u = (a: number[]) => ({ input_tokens: a[0], cached_input_tokens: a[1], output_tokens: a[2], reasoning_output_tokens: a[3], total_tokens: a[0] + a[2] });
  return Buffer.from(JSON.stringify({ timestamp: ts, type: 'event_msg', payload: { type: 'token_count', info: { ...(total ? { total_token_usage: u(total) } : {}), ...(last ? { last_token_usage: u(last) } : {}) } } }));
};

test('Codex: last usage, else the delta of totals; a repeated total is skipped; gpt-5 fallback; mapping', () => {
  const st = newCodexFileState();
  const ev = (b: Buffer) => {
    const v = parseCodexLine(b, 0, 'f', st, 'sess');
    return 'event' in v ? v.event : null;
  };
  const first = ev(tc([1000, 400, 100, 50], [1000, 400, 100, 50]))!;
  assert.is(first.model, 'gpt-5');
  assert.ok(first.fallbackModel);
  assert.is(ev(tc([1000, 400, 100, 50], [7, 0, 1, 0])), null);
  parseCodexLine(Buffer.from(JSON.stringify({ timestamp: 'x', type: 'turn_context', payload: { model: 'gpt-5-codex' } })), 0, 'f', st, 'sess');
  const delta = ev(tc([3000, 1400, 300, 60], null))!;
  assert.equal(delta.usage, { input: 2000, cached: 1000, output: 200, reasoning: 10, total: 2200 });
  assert.is(delta.model, 'gpt-5-codex');
  assert.not.ok(delta.fallbackModel);
  const r = codexRequest(delta);
  assert.equal([r.inputTokens, r.cacheReadTokens, r.outputTokens, r.cacheWrite5mTokens, r.reasoningTokens], [1000, 1000, 200, 0, 10]);
  assert.is(r.key, 'codex:sess:3300');
  assert.ok(llmRequestPayload.safeParse(r).success);
  assert.equal(parseCodexLine(Buffer.from('{"type":"event_msg","payload":{"type":"token_count",'), 0, 'f', st, 's'), { corrupt: true });
});

test('Codex files: sessions/ wins over the same path in archived_sessions/', () => {
  const home = join(dir, 'codex');
  for (const d of ['sessions/2026/01/20', 'archived_sessions/2026/01/20', 'archived_sessions/2026/01/19']) mkdirSync(join(home, d), { recursive: true });
  for (const f of ['sessions/2026/01/20/a.jsonl', 'archived_sessions/2026/01/20/a.jsonl', 'archived_sessions/2026/01/19/b.jsonl']) writeFileSync(join(home, f), '');
  assert.equal(codexFiles([home]).map((f) => f.slice(home.length + 1)), ['sessions/2026/01/20/a.jsonl', 'archived_sessions/2026/01/19/b.jsonl']);
});

test('config dirs: CLAUDE_CONFIG_DIR list (or ~/.claude and ~/.config/claude), CODEX_HOME list, profiles', () => {
  const home = join(dir, 'home');
  for (const d of ['.claude/projects', '.config/claude/projects', 'alt/projects', 'prof/projects', '.codex', 'cx2']) mkdirSync(join(home, d), { recursive: true });
  assert.equal(usageDirs({ HOME: home }).claude, [join(home, '.config/claude'), join(home, '.claude')]);
  assert.equal(usageDirs({ HOME: home, CLAUDE_CONFIG_DIR: `${join(home, 'alt/projects')}, /nonexistent` }).claude, [join(home, 'alt')]);
  const profiles: Profile[] = [
    { id: 'p', runtime: 'claude', env: { CLAUDE_CONFIG_DIR: join(home, 'prof') }, args: [] },
    { id: 'q', runtime: 'codex', env: { CODEX_HOME: join(home, 'cx2') }, args: [] },
  ];
  const d = usageDirs({ HOME: home, CODEX_HOME: '~/.codex' }, profiles);
  assert.equal(d.claude, [join(home, '.config/claude'), join(home, '.claude'), join(home, 'prof')]);
  assert.equal(d.codex, [join(home, '.codex'), join(home, 'cx2')]);
});

test('incremental reading: a partial last line waits; dedup spans files and calls; corrupt lines counted', async () => {
  const f1 = join(dir, 'projects', '-app', 's1.jsonl');
  const f2 = join(dir, 'projects', '-app', 's2.jsonl');
  mkdirSync(join(dir, 'projects', '-app'), { recursive: true });
  const full = JSON.stringify(line()) + '\n';
  const second = JSON.stringify(line({ requestId: 'req_2' }, {}, { id: 'msg_2' }));
  writeFileSync(f1, full + 'garbage "usage":{\n' + second.slice(0, 40));
  const d = new ClaudeDedup(DEFAULT_PRICES);
  const r1 = await readClaudeFile(f1, 0, d);
  assert.is(d.entries.length, 1);
  assert.is(r1.corrupt, 1);
  assert.is(r1.offset, Buffer.byteLength(full) + 'garbage "usage":{\n'.length);
  appendFileSync(f1, second.slice(40) + '\n');
  const r2 = await readClaudeFile(f1, r1.offset, d);
  assert.is(d.entries.length, 2);
  assert.is(r2.offset, r2.size);
  // A resumed session's copy in another file counts nothing new.
  writeFileSync(f2, full + second + '\n');
  await readClaudeFile(f2, 0, d);
  assert.is(d.entries.length, 2);
  // Codex state carries between calls.
  const cf = join(dir, 'r.jsonl');
  writeFileSync(cf, tc([100, 0, 10, 0], null).toString() + '\n');
  const st = newCodexFileState();
  const got: CodexEvent[] = [];
  const c1 = await readCodexFile(cf, 0, st, (e) => got.push(e));
  appendFileSync(cf, tc([250, 0, 30, 0], null, '2026-01-20T10:01:00.000Z').toString() + '\n');
  await readCodexFile(cf, c1.offset, st, (e) => got.push(e));
  assert.equal(got.map((e) => e.usage.input), [100, 150]);
});

test('prices: per-term tiering above 200k, per-request long context, fast multiplier, unknown is null', () => {
  const sonnet = findPrice('claude-sonnet-4-5-20250929', DEFAULT_PRICES)!;
  const t = { inputTokens: 250_000, outputTokens: 0, cacheWrite5mTokens: 0, cacheWrite1hTokens: 0, cacheReadTokens: 0 };
  assert.ok(Math.abs(costUsd(t, sonnet) - (200_000 * 3 + 50_000 * 6) / 1e6) < 1e-12);
  const g54 = findPrice('gpt-5.4', DEFAULT_PRICES)!;
  assert.ok(Math.abs(costUsd({ ...t, inputTokens: 20_000, cacheReadTokens: 280_000, outputTokens: 0 }, g54) - 0.24) < 1e-12);
  assert.ok(Math.abs(costUsd({ ...t, inputTokens: 272_000 }, g54) - 0.68) < 1e-12);
  const opus46 = findPrice('claude-opus-4-6', DEFAULT_PRICES)!;
  assert.ok(Math.abs(costUsd({ ...t, inputTokens: 1e6 }, opus46, 'fast') - 30) < 1e-9);
  assert.ok(Math.abs(costUsd({ ...t, inputTokens: 1e6 }, findPrice('gpt-5', DEFAULT_PRICES)!, 'fast') - 1.25) < 1e-9);
  assert.is(findPrice('claude-unknown-9', DEFAULT_PRICES), null);
});

test('Codex subagent replay: only a thread_spawn rollout (in its first 16 KiB) whose first two counts share a second', () => {
  const tc = (ts: string, input: number) => JSON.stringify({ timestamp: ts, type: 'event_msg', payload: { type: 'token_count', info: { total_token_usage: { input_tokens: input, cached_input_tokens: 0, output_tokens: 1, reasoning_output_tokens: 0, total_tokens: input + 1 } } } });
  const meta = (source: unknown, pad = '') => JSON.stringify({ timestamp: '2026-01-22T10:03:00.000Z', type: 'session_meta', payload: { id: 'sub', instructions: pad, source } });
  const spawn = { subagent: { thread_spawn: { parent_thread_id: 'p' } } };
  const file = (name: string, lines: string[]) => {
    const f = join(dir, name);
    writeFileSync(f, lines.join('\n') + '\n');
    return f;
  };
  const same = [tc('2026-01-22T10:03:00.100Z', 10), tc('2026-01-22T10:03:00.900Z', 20), tc('2026-01-22T10:04:00.000Z', 30)];
  assert.is(detectCodexReplaySync(file('r1.jsonl', [meta(spawn), ...same])), '2026-01-22T10:03:00');
  assert.is(detectCodexReplaySync(file('r2.jsonl', [meta('cli'), ...same])), null, 'not a subagent');
  assert.is(detectCodexReplaySync(file('r3.jsonl', [meta('cli', 'x'.repeat(17_000)), JSON.stringify({ type: 'x', payload: spawn }), ...same])), null, 'thread_spawn after the first 16 KiB');
  assert.is(detectCodexReplaySync(file('r4.jsonl', [meta(spawn), tc('2026-01-22T10:03:00.100Z', 10), tc('2026-01-22T10:03:01.000Z', 20)])), null, 'first two counts in different seconds');
  assert.is(detectCodexReplaySync(file('r5.jsonl', [meta(spawn), tc('2026-01-22T10:03:00.100Z', 10)])), null, 'one count: no replay');
  // Read: the replayed counts are skipped, the next one counts from their totals.
  const st = newCodexFileState();
  const got: CodexEvent[] = [];
  return readCodexFile(join(dir, 'r1.jsonl'), 0, st, (e) => got.push(e), { sync: true }).then(() => {
    assert.equal(got.map((e) => e.usage.input), [10], 'only the count after the replay, as a delta from its totals');
  });
});

test('non-ASCII text: kept strings come out as UTF-8 (raw or escaped), content is no reason to re-read', () => {
  const e = entry({ cwd: '/home/jörg/日本', gitBranch: 'fix-é', uuid: 'u→1' }, {}, { content: [{ type: 'text', text: 'naïve “quotes” ✓' }] });
  assert.is(e.cwd, '/home/jörg/日本');
  assert.is(e.branch, 'fix-é');
  assert.is(e.uuid, 'u→1');
  const raw = JSON.stringify(line({ cwd: 'X' })).replace('"X"', '"/h/caf\\u00e9/\\ud83d\\ude00"');
  const v = parse(raw);
  assert.ok('entry' in v && v.entry.cwd === '/h/café/😀', JSON.stringify(v));
  // Invalid UTF-8 inside the content is not a corrupt line (as before: decoded with replacement characters).
  const bad = Buffer.concat([Buffer.from(JSON.stringify(line()).slice(0, -1) + ',"x":"'), Buffer.from([0xff, 0xfe]), Buffer.from('"}')]);
  assert.ok('entry' in parseClaudeLine(bad, 0, ctx));
});

test("Codex config.toml: service_tier fast or priority (ccusage's reading)", () => {
  assert.ok(configRequestsFast('service_tier = "fast"'));
  assert.ok(configRequestsFast("model = 'x'\nservice_tier = 'priority' # higher tier"));
  assert.ok(configRequestsFast('  service_tier=priority'));
  assert.not.ok(configRequestsFast('# service_tier = "fast"'));
  assert.not.ok(configRequestsFast('service_tier_override = "fast"'));
  assert.not.ok(configRequestsFast('service_tier = "breakfast"'));
  assert.not.ok(configRequestsFast('service_tier = "flex"'));
  assert.equal(codexRequest({ sessionId: 's', file: 'f', lineOffset: 0, timestamp: 't', ms: 0, model: 'gpt-5.4', fallbackModel: false, usage: { input: 2, cached: 1, output: 1, reasoning: 0, total: 3 }, runningTotal: 3 }, true).speed, 'fast');
});

test.run();

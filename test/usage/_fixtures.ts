// Generated Claude Code transcripts and Codex rollouts with every counting trap of issue #14 item 1
// (docs/cost.md), for comparing `svc-runner usage` with ccusage. Deterministic.
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';

export interface FixtureDirs {
  home: string;
  /** CLAUDE_CONFIG_DIR value: two config dirs, comma-separated. */
  claudeConfigDir: string;
  codexHome: string;
}

const write = (path: string, lines: (object | string)[]) => {
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, lines.map((l) => (typeof l === 'string' ? l : JSON.stringify(l))).join('\n') + '\n');
};

interface U { in?: number; out?: number; c5?: number; c1?: number; read?: number; flat?: number; speed?: 'fast' | 'standard' }
function usage(u: U): Record<string, unknown> {
  const o: Record<string, unknown> = { input_tokens: u.in ?? 0, output_tokens: u.out ?? 0, cache_read_input_tokens: u.read ?? 0, service_tier: 'standard' };
  if (u.flat !== undefined) o.cache_creation_input_tokens = u.flat;
  else {
    o.cache_creation_input_tokens = (u.c5 ?? 0) + (u.c1 ?? 0);
    o.cache_creation = { ephemeral_5m_input_tokens: u.c5 ?? 0, ephemeral_1h_input_tokens: u.c1 ?? 0 };
  }
  if (u.speed) o.speed = u.speed;
  return o;
}

let n = 0;
function assistant(session: string, ts: string, model: string, msg: string | null, req: string | null, u: U, extra: Record<string, unknown> = {}) {
  n++;
  const message: Record<string, unknown> = { model, type: 'message', role: 'assistant', content: [{ type: 'text', text: `answer ${n}` }], usage: usage(u) };
  if (msg !== null) message.id = msg;
  const line: Record<string, unknown> = { parentUuid: null, isSidechain: false, userType: 'external', cwd: '/work/app', sessionId: session, version: '2.1.12', gitBranch: 'main', type: 'assistant', message, uuid: `uuid-${n}`, timestamp: ts, ...extra };
  if (req !== null) line.requestId = req;
  return line;
}
const user = (session: string, ts: string) => ({ type: 'user', sessionId: session, version: '2.1.12', cwd: '/work/app', gitBranch: 'main', message: { role: 'user', content: 'fix the test' }, uuid: `u-${ts}`, timestamp: ts });

export function writeFixtures(root: string): FixtureDirs {
  const home = join(root, 'home');
  const c1 = join(root, 'claude-a');
  const c2 = join(root, 'claude-b');
  const codex = join(root, 'codex');
  mkdirSync(home, { recursive: true });
  const S1 = '11111111-1111-4111-8111-111111111111';
  const S2 = '22222222-2222-4222-8222-222222222222';
  const S3 = '33333333-3333-4333-8333-333333333333';
  const p = join(c1, 'projects', '-work-app');
  const opus = 'claude-opus-4-5-20251101', sonnet = 'claude-sonnet-4-5-20250929', haiku = 'claude-haiku-4-5-20251001';

  const subMsg = assistant(S1, '2026-01-20T12:05:00.000Z', haiku, 'msg_sub1', 'req_sub1', { in: 40, out: 300, read: 9_000, c5: 1_000 }, { isSidechain: true, agentId: 'a1' });
  const lostSub = assistant(S1, '2026-01-20T12:06:00.000Z', haiku, 'msg_sub_lost', 'req_sub_lost', { in: 7, out: 70, read: 700 }, { isSidechain: true });
  // Session 1: the parent.
  write(join(p, `${S1}.jsonl`), [
    { type: 'summary', summary: 'Fix failing test', leafUuid: 'x' },
    user(S1, '2026-01-20T12:00:00.000Z'),
    // Streaming duplicates: one response, one line per content block, the same usage.
    assistant(S1, '2026-01-20T12:00:05.000Z', opus, 'msg_a', 'req_a', { in: 3, out: 25, read: 19_024, c5: 187 }),
    assistant(S1, '2026-01-20T12:00:05.100Z', opus, 'msg_a', 'req_a', { in: 3, out: 25, read: 19_024, c5: 187 }),
    assistant(S1, '2026-01-20T12:00:05.200Z', opus, 'msg_a', 'req_a', { in: 3, out: 25, read: 19_024, c5: 187 }),
    // A later block of the same response with the final (larger) output count: the better line wins.
    assistant(S1, '2026-01-20T12:01:00.000Z', opus, 'msg_b', 'req_b', { in: 5, out: 10, read: 20_000, c5: 500 }),
    assistant(S1, '2026-01-20T12:01:00.300Z', opus, 'msg_b', 'req_b', { in: 5, out: 812, read: 20_000, c5: 500 }),
    // 5 m / 1 h cache write split.
    assistant(S1, '2026-01-20T12:02:00.000Z', opus, 'msg_c', 'req_c', { in: 2, out: 100, read: 30_000, c5: 1_200, c1: 4_800 }),
    // Above 200k in one entry (Sonnet 4.5 has a long-context price).
    assistant(S1, '2026-01-20T12:03:00.000Z', sonnet, 'msg_d', 'req_d', { in: 250_000, out: 210_000, read: 350_000, c5: 220_000, c1: 201_000 }),
    // Fast mode on Opus 4.6: reported as claude-opus-4-6-fast, priced ×6.
    assistant(S1, '2026-01-20T12:04:00.000Z', 'claude-opus-4-6', 'msg_e', 'req_e', { in: 10, out: 2_000, read: 40_000, c5: 900, speed: 'fast' }),
    // Subagent progress line in the parent carrying the subagent's message (also in the subagent file).
    { type: 'progress', sessionId: S1, version: '2.1.12', timestamp: '2026-01-20T12:05:00.500Z', uuid: 'prog-1', data: { type: 'agent_progress', message: { type: 'assistant', timestamp: subMsg.timestamp, requestId: 'req_sub1', isSidechain: true, message: subMsg.message, uuid: subMsg.uuid } } },
    // …and one whose subagent file is gone: counted from the progress line alone.
    { type: 'progress', sessionId: S1, version: '2.1.12', timestamp: '2026-01-20T12:06:00.500Z', uuid: 'prog-2', data: { type: 'agent_progress', message: { type: 'assistant', timestamp: lostSub.timestamp, requestId: 'req_sub_lost', isSidechain: true, message: lostSub.message } } },
    // Synthetic API error message: not a model.
    assistant(S1, '2026-01-20T12:07:00.000Z', '<synthetic>', 'msg_syn', 'req_syn', { in: 0, out: 0 }, { isApiErrorMessage: true }),
    // Corrupt lines: cut mid-write, and plain garbage.
    '{"type":"assistant","message":{"id":"msg_broken","usage":{"input_tokens":5,"output_t',
    'not json at all "usage":{ }}}',
    '',
    // Dropped by ccusage's filter: null requestId, a version that is not semver, microsecond timestamps,
    // an empty model, a speed it does not know.
    assistant(S1, '2026-01-20T12:08:00.000Z', opus, 'msg_f', null, { in: 1, out: 1 }, { requestId: null }),
    assistant(S1, '2026-01-20T12:08:10.000Z', opus, 'msg_g', 'req_g', { in: 1, out: 1 }, { version: 'dev' }),
    assistant(S1, '2026-01-20T12:08:20.123456Z', opus, 'msg_h', 'req_h', { in: 1, out: 1 }),
    assistant(S1, '2026-01-20T12:08:30.000Z', '', 'msg_i', 'req_i', { in: 1, out: 1 }),
    assistant(S1, '2026-01-20T12:08:40.000Z', opus, 'msg_j', 'req_j', { in: 1, out: 1, speed: 'priority' as 'fast' }),
    // Lines without message.id are never deduplicated: both count.
    assistant(S1, '2026-01-20T12:09:00.000Z', haiku, null, 'req_k', { in: 11, out: 22, read: 33 }),
    assistant(S1, '2026-01-20T12:09:00.000Z', haiku, null, 'req_k', { in: 11, out: 22, read: 33 }),
    // A flat cache write count without the split (older versions): 5 m.
    assistant(S1, '2026-01-20T12:10:00.000Z', haiku, 'msg_l', 'req_l', { in: 4, out: 44, flat: 4_400, read: 1 }),
    // Across the day boundary in UTC and in other zones.
    assistant(S1, '2026-01-20T23:30:00.000Z', opus, 'msg_m', 'req_m', { in: 6, out: 600, read: 60_000, c5: 6_000 }),
    assistant(S1, '2026-01-21T00:30:00.000Z', opus, 'msg_n', 'req_n', { in: 7, out: 700, read: 70_000, c1: 7_000 }),
    assistant(S1, '2026-01-21T14:00:00.000Z', sonnet, 'msg_o', 'req_o', { in: 8, out: 800, read: 80_000, c5: 8_000 }),
  ]);
  // The subagent's own file.
  write(join(p, S1, 'subagents', 'agent-a1.jsonl'), [
    subMsg,
    assistant(S1, '2026-01-20T12:05:30.000Z', haiku, 'msg_sub2', 'req_sub2', { in: 9, out: 90, read: 9_900, c5: 99 }, { isSidechain: true, agentId: 'a1' }),
  ]);
  // A /btw side question: replays the parent's msg_c with a new requestId (dropped), then its own answer.
  write(join(p, S1, 'subagents', 'agent-btw1.jsonl'), [
    assistant(S1, '2026-01-20T12:02:30.000Z', opus, 'msg_c', 'req_btw_replay', { in: 2, out: 100, read: 90_000, c5: 1_200, c1: 4_800 }, { isSidechain: true }),
    assistant(S1, '2026-01-20T12:02:40.000Z', opus, 'msg_btw_answer', 'req_btw_answer', { in: 3, out: 333, read: 3_000 }, { isSidechain: true }),
  ]);
  // Session 2 resumes session 1: Claude Code copies the earlier messages into the new file, then goes on.
  write(join(p, `${S2}.jsonl`), [
    assistant(S2, '2026-01-20T12:00:05.000Z', opus, 'msg_a', 'req_a', { in: 3, out: 25, read: 19_024, c5: 187 }),
    assistant(S2, '2026-01-20T12:01:00.300Z', opus, 'msg_b', 'req_b', { in: 5, out: 812, read: 20_000, c5: 500 }),
    assistant(S2, '2026-01-20T12:02:00.000Z', opus, 'msg_c', 'req_c', { in: 2, out: 100, read: 30_000, c5: 1_200, c1: 4_800 }),
    assistant(S2, '2026-01-22T09:00:00.000Z', sonnet, 'msg_p', 'req_p', { in: 12, out: 1_200, read: 120_000, c5: 12_000 }),
    assistant(S2, '2026-01-22T09:01:00.000Z', 'claude-unknown-9', 'msg_q', 'req_q', { in: 100, out: 100 }),
  ]);
  // A second config dir (CLAUDE_CONFIG_DIR is a list): another project, plus a copy of a line seen above.
  write(join(c2, 'projects', '-work-other', `${S3}.jsonl`), [
    assistant(S3, '2026-01-21T08:00:00.000Z', haiku, 'msg_r', 'req_r', { in: 20, out: 2_000, read: 200_000, c5: 20_000 }),
    assistant(S3, '2026-01-21T14:00:00.000Z', sonnet, 'msg_o', 'req_o', { in: 8, out: 800, read: 80_000, c5: 8_000 }),
  ]);

  // Codex.
  const tc = (usageTotal: number[], last: number[] | null) => {
    const u = (a: number[]) => ({ input_tokens: a[0], cached_input_tokens: a[1], output_tokens: a[2], reasoning_output_tokens: a[3], total_tokens: a[0] + a[2] });
    return { type: 'token_count', info: { total_token_usage: u(usageTotal), ...(last ? { last_token_usage: u(last) } : {}), model_context_window: 272_000 }, rate_limits: { primary: { used_percent: 7, window_minutes: 300, resets_at: 1_763_483_205 } } };
  };
  const line = (ts: string, type: string, payload: object) => ({ timestamp: ts, type, payload });
  const X1 = '019a9776-0a34-7842-8627-112b63d66e90';
  const rollout1 = [
    line('2026-01-20T21:55:40.101Z', 'session_meta', { id: X1, timestamp: '2026-01-20T21:55:40.090Z', cwd: '/work/swe', originator: 'codex_cli_rs', cli_version: '0.58.0', source: 'cli', model_provider: 'openai', git: { commit_hash: 'a1b2c3', branch: 'feature-x', repository_url: 'git@example.com:me/swe.git' } }),
    line('2026-01-20T21:55:41.002Z', 'turn_context', { cwd: '/work/swe', approval_policy: 'on-request', sandbox_policy: { type: 'workspace-write' }, model: 'gpt-5-codex', effort: 'medium', summary: 'auto' }),
    line('2026-01-20T21:55:42.000Z', 'response_item', { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'hi' }] }),
    line('2026-01-20T21:55:56.513Z', 'event_msg', tc([12_840, 9_984, 412, 256], [12_840, 9_984, 412, 256])),
    // The same totals again: a repeat, not a new request.
    line('2026-01-20T21:55:57.000Z', 'event_msg', tc([12_840, 9_984, 412, 256], [12_840, 9_984, 412, 256])),
    line('2026-01-20T21:55:58.000Z', 'event_msg', { type: 'token_count', info: null, rate_limits: { primary: { used_percent: 8, window_minutes: 300, resets_at: 1_763_483_205 } } }),
    '{"timestamp":"2026-01-20T21:56:00.000Z","type":"event_msg","payload":{"type":"token_count","info":{"total_tok',
    // Totals only (no last_token_usage): the delta counts.
    line('2026-01-20T23:30:00.000Z', 'event_msg', tc([30_000, 20_000, 1_000, 300], null)),
    line('2026-01-21T00:10:00.000Z', 'turn_context', { cwd: '/work/swe', model: 'gpt-5.1-codex-max' }),
    line('2026-01-21T00:30:00.000Z', 'event_msg', tc([330_000, 220_000, 6_000, 1_000], [300_000, 200_000, 5_000, 700])),
  ];
  write(join(codex, 'sessions', '2026', '01', '20', `rollout-2026-01-20T21-55-40-${X1}.jsonl`), rollout1);
  // The same rollout archived as well: the sessions/ copy wins.
  write(join(codex, 'archived_sessions', '2026', '01', '20', `rollout-2026-01-20T21-55-40-${X1}.jsonl`), rollout1);
  // An archived-only rollout from an early build: no turn_context, so priced as gpt-5 (flagged).
  const X2 = '01991111-2222-7333-8444-555555555555';
  write(join(codex, 'archived_sessions', '2026', '01', '19', `rollout-2026-01-19T10-00-00-${X2}.jsonl`), [
    line('2026-01-19T10:00:00.000Z', 'session_meta', { id: X2, cwd: '/work/old', originator: 'codex_cli_rs', cli_version: '0.30.0' }),
    line('2026-01-19T10:00:05.000Z', 'event_msg', tc([5_000, 1_000, 500, 100], [5_000, 1_000, 500, 100])),
    line('2026-01-19T10:05:05.000Z', 'event_msg', tc([9_000, 3_000, 900, 200], [4_000, 2_000, 400, 100])),
  ]);
  // Another day and model, with the large-context gpt-5.4 price.
  const X3 = '019b0000-0000-7000-8000-000000000003';
  write(join(codex, 'sessions', '2026', '01', '22', `rollout-2026-01-22T08-00-00-${X3}.jsonl`), [
    line('2026-01-22T08:00:00.000Z', 'session_meta', { id: X3, cwd: '/work/swe', git: { branch: 'main' } }),
    line('2026-01-22T08:00:01.000Z', 'turn_context', { cwd: '/work/swe', model: 'gpt-5.4' }),
    line('2026-01-22T08:01:00.000Z', 'event_msg', tc([450_000, 100_000, 20_000, 5_000], [450_000, 100_000, 20_000, 5_000])),
  ]);
  // A subagent rollout (session_meta source.subagent.thread_spawn, as Codex writes it, then its parent's
  // session_meta) starts with a replay of its parent's token counts, all stamped with the second it was
  // spawned: skipped, their totals kept as the baseline for the subagent's own totals-only counts.
  const X4 = '019b0000-0000-7000-8000-000000000004';
  const X5 = '019b0000-0000-7000-8000-000000000005';
  write(join(codex, 'sessions', '2026', '01', '22', `rollout-2026-01-22T10-00-00-${X4}.jsonl`), [
    line('2026-01-22T10:00:00.000Z', 'session_meta', { id: X4, cwd: '/work/swe', source: 'cli' }),
    line('2026-01-22T10:00:01.000Z', 'turn_context', { cwd: '/work/swe', model: 'gpt-5.2' }),
    line('2026-01-22T10:01:00.000Z', 'event_msg', tc([1_000, 100, 200, 0], [1_000, 100, 200, 0])),
    line('2026-01-22T10:02:00.000Z', 'event_msg', tc([1_500, 150, 300, 0], [500, 50, 100, 0])),
  ]);
  write(join(codex, 'sessions', '2026', '01', '22', `rollout-2026-01-22T10-03-00-${X5}.jsonl`), [
    line('2026-01-22T10:03:00.120Z', 'session_meta', { id: X5, cwd: '/work/swe', source: { subagent: { thread_spawn: { parent_thread_id: X4, depth: 1 } } } }),
    line('2026-01-22T10:03:00.121Z', 'session_meta', { id: X4, cwd: '/work/swe', source: 'cli' }),
    line('2026-01-22T10:03:00.122Z', 'turn_context', { cwd: '/work/swe', model: 'gpt-5.2' }),
    line('2026-01-22T10:03:00.200Z', 'event_msg', tc([1_000, 100, 200, 0], [1_000, 100, 200, 0])),
    line('2026-01-22T10:03:00.300Z', 'event_msg', tc([1_500, 150, 300, 0], [500, 50, 100, 0])),
    line('2026-01-22T10:04:00.000Z', 'event_msg', tc([1_600, 160, 320, 0], null)),
    line('2026-01-22T10:05:00.000Z', 'event_msg', tc([1_650, 165, 330, 0], [50, 5, 10, 0])),
  ]);
  // A rollout that is not a subagent's may have two counts in one second: both count.
  const X6 = '019b0000-0000-7000-8000-000000000006';
  write(join(codex, 'sessions', '2026', '01', '22', `rollout-2026-01-22T11-00-00-${X6}.jsonl`), [
    line('2026-01-22T11:00:00.000Z', 'session_meta', { id: X6, cwd: '/work/swe', source: 'exec' }),
    line('2026-01-22T11:00:00.100Z', 'turn_context', { cwd: '/work/swe', model: 'gpt-5.2' }),
    line('2026-01-22T11:00:01.100Z', 'event_msg', tc([700, 0, 70, 0], [700, 0, 70, 0])),
    line('2026-01-22T11:00:01.900Z', 'event_msg', tc([1_400, 0, 140, 0], [700, 0, 70, 0])),
  ]);
  return { home, claudeConfigDir: `${c1},${c2}`, codexHome: codex };
}

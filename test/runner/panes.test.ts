// The pane watcher (docs/orchestrator.md "Pane watcher"): prompts only a person can answer and provider
// usage limits in Claude Code and Codex panes, reported once per occurrence; sessions that end
// without a stop command are noticed. Fixed screens for the text rules, then real tmux and fake agents.
// needs: tmux
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { readPane, resetTime } from '../../runner/pane-text.ts';
import { fleet, pane, type, waitPane } from './_fleet.ts';
import type { Fleet } from './_fleet.ts';
import { runCli, sleep, waitUntil } from './_harness.ts';

const CLAUDE_IDLE = `╭───────────────────────────────────────────────────╮
│ ✻ Welcome to Claude Code!                         │
│   cwd: /home/dev/repo                             │
╰───────────────────────────────────────────────────╯

> fix the flaky test

● I'll look at the test first.

╭───────────────────────────────────────────────────╮
│ >                                                 │
╰───────────────────────────────────────────────────╯
  ? for shortcuts`;

const CLAUDE_WORKING = `● Reading test/flaky.test.ts

✻ Pondering… (12s · ↑ 1.2k tokens · esc to interrupt)

╭───────────────────────────────────────────────────╮
│ >                                                 │
╰───────────────────────────────────────────────────╯`;

const CLAUDE_PERMISSION = `● Bash(rm -rf build)
╭───────────────────────────────────────────────────╮
│ Bash command                                      │
│                                                   │
│   rm -rf build                                    │
│   Remove the build output                         │
│                                                   │
│ Do you want to proceed?                           │
│ ❯ 1. Yes                                          │
│   2. Yes, and don't ask again for rm commands     │
│   3. No, and tell Claude what to do differently (esc) │
╰───────────────────────────────────────────────────╯`;

const CLAUDE_EDIT = `│ Do you want to make this edit to flaky.test.ts?   │
│ ❯ 1. Yes                                          │
│   2. Yes, allow all edits during this session (shift+tab) │
│   3. No, and tell Claude what to do differently (esc) │`;

const CLAUDE_TRUST = ` Do you trust the files in this folder?

 /home/dev/repo

 Claude Code may read files in this folder. Reading untrusted files may lead Claude Code to behave in unexpected ways.

 ❯ 1. Yes, proceed
   2. No, exit

 Enter to confirm · Esc to exit`;

const CLAUDE_QUESTION = `● User answered Claude's questions:

 Which database should the tests use?

 ❯ 1. PGlite
   2. PostgreSQL

 Enter to select · ↑/↓ to navigate · Esc to cancel`;

const CLAUDE_QUOTA = `● I'll continue with the refactor.
  ⎿  Claude usage limit reached. Your limit will reset at 5pm (UTC).

     /upgrade to increase your usage limit.

╭───────────────────────────────────────────────────╮
│ >                                                 │
╰───────────────────────────────────────────────────╯`;

const CLAUDE_QUOTA_NEW = `  ⎿  5-hour limit reached ∙ resets 3am (Europe/Berlin)
     /upgrade to increase your usage limit.
╭───────────────────────────────────────────────────╮
│ >                                                 │
╰───────────────────────────────────────────────────╯`;

const CODEX_IDLE = `>_ OpenAI Codex (v0.46.0)

 model:     gpt-5-codex   /model to change
 directory: ~/repo

› Find and fix a bug in @filename

  100% context left · ? for shortcuts`;

const CODEX_WORKING = `• Running tests

• Working (1m 03s • esc to interrupt)

› Summarize recent commits

  98% context left`;

const CODEX_APPROVAL = `  Would you like to run the following command?

  Reason: remove the build output before rebuilding

  $ rm -rf build

› 1. Yes, proceed (y)
  2. Yes, and don't ask again for this command (a)
  3. No, and tell Codex what to do differently (esc)

  Press enter to confirm or esc to cancel`;

const CODEX_QUOTA = `■ You've hit your usage limit. Upgrade to Pro (https://openai.com/chatgpt/pricing) or try again in 1 hour 38 minutes.

› Explain this codebase

  64% context left · ? for shortcuts`;

test('pane text: Claude Code and Codex screens are read as working, idle, waiting or quota', () => {
  const now = new Date('2026-11-23T10:00:00Z');
  const read = (t: string) => readPane(t, now);
  assert.is(read(CLAUDE_IDLE).state, 'idle');
  assert.is(read(CLAUDE_WORKING).state, 'working');
  assert.equal([read(CLAUDE_PERMISSION).state, read(CLAUDE_PERMISSION).prompt?.kind], ['waiting', 'permission']);
  assert.equal([read(CLAUDE_EDIT).state, read(CLAUDE_EDIT).prompt?.kind], ['waiting', 'permission']);
  assert.equal([read(CLAUDE_TRUST).state, read(CLAUDE_TRUST).prompt?.kind], ['waiting', 'trust']);
  assert.equal([read(CLAUDE_QUESTION).state, read(CLAUDE_QUESTION).prompt?.kind], ['waiting', 'question']);
  assert.equal(read(CLAUDE_QUOTA).quota, { key: read(CLAUDE_QUOTA).quota!.key, provider: 'anthropic', resetsAt: '2026-11-23T17:00:00.000Z' });
  assert.is(read(CLAUDE_QUOTA).state, 'quota');
  assert.equal(read(CLAUDE_QUOTA_NEW).quota?.resetsAt, '2026-11-24T02:00:00.000Z');
  assert.is(read(CODEX_IDLE).state, 'idle');
  assert.is(read(CODEX_WORKING).state, 'working');
  assert.equal([read(CODEX_APPROVAL).state, read(CODEX_APPROVAL).prompt?.kind], ['waiting', 'permission']);
  assert.equal([read(CODEX_QUOTA).state, read(CODEX_QUOTA).quota?.provider, read(CODEX_QUOTA).quota?.resetsAt], ['quota', 'openai', '2026-11-23T11:38:00.000Z']);
  // A box-drawing-free tmux (no UTF-8 locale) shows `_` for those characters: same answers.
  const ascii = (t: string) => t.replace(/[^\x00-\x7f]/g, '_');
  assert.is(read(ascii(CLAUDE_PERMISSION)).prompt?.kind, 'permission');
  assert.is(read(ascii(CODEX_APPROVAL)).prompt?.kind, 'permission');
  assert.is(read(ascii(CLAUDE_QUOTA)).state, 'quota');
  // The same words in the agent's own prose are not a prompt.
  assert.is(read('● The README asks: Do you want to proceed? It is a FAQ entry.\n\n│ > │\n  ? for shortcuts').state, 'idle');
  // A working agent with an old limit message still on screen is working; a countdown that ticks is the same occurrence.
  assert.is(read(`${CLAUDE_QUOTA}\n✻ Working… (esc to interrupt)`).state, 'working');
  assert.is(read(CODEX_QUOTA).quota!.key, read(CODEX_QUOTA.replace('1 hour 38 minutes', '1 hour 37 minutes')).quota!.key);
});

test('reset times: epoch, relative and wall clock in a zone', () => {
  const now = new Date('2026-11-23T22:30:00Z');
  assert.is(resetTime('Claude AI usage limit reached|1795500000', now), new Date(1795500000 * 1000).toISOString());
  assert.is(resetTime("You've hit your usage limit. Try again in 4 days 1 hour 2 minutes.", now), '2026-11-27T23:32:00.000Z');
  assert.is(resetTime('Your limit will reset at 9pm (UTC).', now), '2026-11-24T21:00:00.000Z');
  assert.is(resetTime('resets 10:30pm (America/New_York)', now), '2026-11-24T03:30:00.000Z');
  assert.is(resetTime('resets 5pm (Not/AZone)', now), null);
  assert.is(resetTime('limit reached', now), null);
});

let f: Fleet;
test.before.each(async () => {
  f = await fleet('panes');
});
test.after.each(async () => {
  await f.cleanup();
});

const fast = { SVC_PANES_POLL_MS: '300' };
const payloads = (kind: string) => f.events(kind).map((e) => e.payload);

test('a permission prompt is reported once per occurrence, its end as pane.cleared, a new one again', async () => {
  const conn = await f.start({}, fast);
  assert.is((await conn.command('orchestrator.start', { projectId: 'p1' })).ok, true);
  await waitPane(f, 'svc-p1-orch', /\? for shortcuts/);
  type(f, 'svc-p1-orch', 'ask');
  await waitUntil(() => f.events('pane.prompt').length === 1, 5000, 'pane.prompt');
  await sleep(1500); // five polls with the prompt still showing
  assert.equal(payloads('pane.prompt'), [{ project: 'p1', type: 'pane.prompt', data: { session: 'svc-p1-orch', role: 'orchestrator', runtime: 'claude', promptKind: 'permission' }, origin: 'runner' }]);
  assert.is(f.events('pane.prompt')[0].source, 'project:p1');
  type(f, 'svc-p1-orch', '1');
  await waitUntil(() => f.events('fleet.pane.cleared').length === 1, 5000, () => `fleet.pane.cleared; pane:\n${pane(f, 'svc-p1-orch')}`);
  assert.is(payloads('fleet.pane.cleared')[0].data.was, 'prompt');
  type(f, 'svc-p1-orch', 'ask');
  await waitUntil(() => f.events('pane.prompt').length === 2, 5000, 'the second occurrence');
  const status = await conn.command('orchestrator.status', { projectId: 'p1' });
  assert.equal([status.data.state, status.data.promptKind], ['waiting', 'permission']);
});

test('a Codex usage limit in a slot is reported once with provider and reset time; the slot shows quota in the status', async () => {
  const conn = await f.start({ profiles: [{ id: 'cx', runtime: 'codex', env: { FAKE_AGENT_DIR: f.agentDir }, args: [] }] }, fast);
  const r = await runCli(f.sb, ['slot-start', 'q', '--issue', '9', '--project-root', f.root], f.env);
  assert.is(r.status, 0, r.stderr);
  await waitPane(f, 'svc-p1-slot-q', /Ask Codex/);
  type(f, 'svc-p1-slot-q', 'quota');
  await waitUntil(() => f.events('pane.quota_hit').length === 1, 5000, 'pane.quota_hit');
  await sleep(1200);
  const [hit] = payloads('pane.quota_hit');
  assert.equal({ ...hit, data: { ...hit.data, resetsAt: 'T' } }, { project: 'p1', type: 'pane.quota_hit', slot: 'q', issue: 9, data: { session: 'svc-p1-slot-q', role: 'slot', runtime: 'codex', provider: 'openai', resetsAt: 'T' }, origin: 'runner' });
  const eta = Date.parse(hit.data.resetsAt) - Date.now();
  assert.ok(eta > 2 * 3600_000 && eta < 2 * 3600_000 + 6 * 60_000, `resets in about 2 h 5 min (${eta} ms)`);
  const status = await conn.command('orchestrator.status', { projectId: 'p1' });
  assert.equal(status.data.slots.map((s: any) => [s.slot, s.issue, s.state, s.quota?.provider]), [['q', 9, 'quota', 'openai']]);
  assert.is(status.data.present, false);
});

test('sessions killed from outside are noticed at fleet.pollSeconds (5 s); a stop by command is reported once, by the command', async () => {
  const conn = await f.start({ fleet: { pollSeconds: 5 } });
  assert.is((await conn.command('orchestrator.start', { projectId: 'p1' })).ok, true);
  for (const slot of ['a', 'b']) assert.is((await runCli(f.sb, ['slot-start', slot, '--issue', '1', '--project-root', f.root], f.env)).status, 0);
  await sleep(5500); // one poll sees all three
  f.tmux('kill-session', '-t', '=svc-p1-slot-a');
  f.tmux('kill-session', '-t', '=svc-p1-orch');
  assert.is((await conn.command('slot.stop', { projectId: 'p1', slot: 'b' })).data.stopped, true);
  await waitUntil(() => f.events('slot.stopped').length === 2 && f.events('orchestrator.stopped').length === 1, 8000, () => `stops; have ${JSON.stringify(f.fake.received.map((e) => e.kind))}`);
  await sleep(5500);
  const stops = payloads('slot.stopped').map((p) => [p.slot, p.data.reason]).sort();
  assert.equal(stops, [['a', 'session_ended'], ['b', 'stopped']]);
  assert.equal(payloads('orchestrator.stopped').map((p) => p.data.reason), ['session_ended']);
  assert.is(f.events('orchestrator.started').length, 1, 'the command reported the start; the watcher adopted it silently');
});

test('an orchestrator session started by hand is reported as observed', async () => {
  await f.start({}, fast);
  await sleep(700);
  f.tmux('new-session', '-d', '-s', 'svc-p1-orch', 'sleep', '30');
  f.tmux('new-session', '-d', '-s', 'svc-other-orch', 'sleep', '30');
  await waitUntil(() => f.events('orchestrator.started').length === 1, 5000, 'orchestrator.started');
  assert.equal(payloads('orchestrator.started')[0].data, { session: 'svc-p1-orch', origin: 'observed' });
  await sleep(700);
  assert.is(f.events('orchestrator.started').length, 1, 'a session of an unknown project is ignored');
});

test.run();

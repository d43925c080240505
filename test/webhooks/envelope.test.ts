// Pure rules: the closed catalogue, envelopes built from allowlisted keys only (strings cut, paths never
// included), stable ids, the runner-event mapping, the signature (fixed vector), the
// retry schedule and the circuit table.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { RunnerEvent } from '../../protocol/frames.ts';
import { runnerEnvelopes } from '../../functions/webhooks/capture.ts';
import { CATALOGUE, EVENT_TYPES, SUBSCRIBABLE_TYPES } from '../../functions/webhooks/catalogue.ts';
import type { EventType } from '../../functions/webhooks/catalogue.ts';
import { CIRCUIT_LABEL, afterAttempt, circuitAfterAttempt, resumed, retryDelay, trialDue } from '../../functions/webhooks/circuit.ts';
import type { Circuit } from '../../functions/webhooks/circuit.ts';
import { buildEnvelope, cut, eventId, scrubPaths } from '../../functions/webhooks/envelope.ts';
import { compareVersions, deliveryHeaders, sendsLegacyHeaders, signature } from '../../functions/webhooks/signature.ts';

const SPEC_CATALOGUE = [
  'orchestrator.started', 'orchestrator.stopped', 'slot.dispatched', 'slot.checkpoint', 'slot.stopped', 'pr.opened',
  'pr.checks_changed', 'pr.merged', 'pr.closed', 'issue.blocked', 'person.needed', 'pane.prompt', 'pane.quota_hit',
  'schedule.failed', 'schedule.disabled', 'webhook.test',
];

test('the catalogue is exactly the spec’s list; webhook.test cannot be subscribed to', () => {
  assert.equal(EVENT_TYPES, SPEC_CATALOGUE);
  assert.equal(SUBSCRIBABLE_TYPES, SPEC_CATALOGUE.filter((t) => t !== 'webhook.test'));
  for (const never of ['llm.request', 'tool.call', 'pane.text', 'pane.output', 'session.meta']) assert.not.ok(EVENT_TYPES.includes(never as EventType));
});

const PATHS = [
  '/home/alice/secret-project/src/index.ts',
  '~/secret-project/notes.md',
  '~alice/secret-project',
  './secret-project/a.ts',
  '../secret-project/b',
  'C:\\Users\\alice\\secret-project\\x.ts',
  'C:/Users/alice/secret-project',
  '\\\\fileserver\\share\\secret-project',
  'file:///home/alice/secret-project/x',
  'secret-project/src/deep/file.ts',
  'secret-project/file.ts',
  '(/var/lib/secret-project).',
  '"/srv/secret-project"',
  'cwd=/home/alice/secret-project',
];

test('scrubPaths removes every file system path and keeps prose, names and web addresses', () => {
  for (const p of PATHS) {
    const out = scrubPaths(`before ${p} after`);
    assert.not.match(out, /secret-project|alice/, `${p} → ${out}`);
    assert.match(out, /^before .*\[path\].* after$/);
  }
  const prose = 'Fixed the login bug and/or the logout one; see https://github.com/acme/widgets/pull/3 for acme/widgets (CI/CD: 1/2 done).';
  assert.is(scrubPaths(prose), prose);
  assert.is(scrubPaths('quoted "/etc/passwd", ok'), 'quoted "[path]", ok');
});

test('a path planted in every raw field of every event type never reaches the envelope', () => {
  const plant = (i: number) => `see ${PATHS[i % PATHS.length]} now`;
  for (const type of EVENT_TYPES) {
    const raw: Record<string, unknown> = { slot: plant(1), issue: 12, cwd: plant(2), worktree: plant(3), transcript: plant(4), path: plant(5), file: plant(6), data: {} };
    let i = 0;
    for (const [key, kind] of Object.entries(CATALOGUE[type].data)) {
      const value = kind === 'pr' ? { number: 5, url: `file://${PATHS[0]}`, path: plant(i) } : plant(i);
      raw[key] = value;
      (raw.data as Record<string, unknown>)[key] = value;
      (raw.data as Record<string, unknown>)[`${key}Path`] = plant(i + 7);
      i++;
    }
    const envelope = buildEnvelope({ id: 'evt_x', type, ts: '2026-01-02T03:04:05Z', project: { id: 'p1', repo: 'acme/widgets' }, raw });
    const text = JSON.stringify(envelope);
    assert.not.match(text, /secret-project|alice|fileserver/, `${type}: ${text}`);
    assert.ok(Object.keys(envelope.data).every((k) => k in CATALOGUE[type].data), `${type}: only allowlisted keys`);
  }
});

test('data carries only allowlisted keys, typed; raw extras (prompts, pane text, tokens, env) never pass', () => {
  const raw = {
    slot: 'w2',
    issue: 42,
    paneText: 'Do you want to proceed? (y/n)',
    prompt: 'system prompt',
    token: 'ghp_secret',
    env: { GITHUB_TOKEN: 'x' },
    data: { checkpoint: 'pr_open', summary: 'Opened the PR', pr: { number: 17, url: 'https://github.com/acme/widgets/pull/17', head: 'x' }, extra: 'nope' },
  };
  const e = buildEnvelope({ id: 'evt_1', type: 'slot.checkpoint', ts: new Date(Date.UTC(2026, 0, 2, 3, 4, 5, 6)), project: { id: 'p1', repo: 'acme/widgets' }, raw });
  assert.equal(e, {
    id: 'evt_1',
    type: 'slot.checkpoint',
    ts: '2026-01-02T03:04:05.006Z',
    project: { id: 'p1', repo: 'acme/widgets' },
    slot: 'w2',
    issue: 42,
    data: { checkpoint: 'pr_open', summary: 'Opened the PR', pr: { number: 17, url: 'https://github.com/acme/widgets/pull/17' } },
  });
  assert.equal(Object.keys(e), ['id', 'type', 'ts', 'project', 'slot', 'issue', 'data']);
  const prompt = buildEnvelope({ id: 'e', type: 'pane.prompt', ts: new Date(), project: null, raw: { data: { session: 's1', promptKind: 'permission', text: 'Allow rm -rf?', pane: 'full pane text' } } });
  assert.equal(prompt.data, { session: 's1', promptKind: 'permission' });
  // Wrong types are dropped, not coerced.
  const odd = buildEnvelope({ id: 'e', type: 'orchestrator.started', ts: new Date(), project: null, raw: { issue: '12', slot: 5, data: { round: '3', profile: ['x'], model: 'opus' } } });
  assert.equal(odd, { id: 'e', type: 'orchestrator.started', ts: odd.ts, project: null, data: { model: 'opus' } });
  for (const issue of [0, -1, 1.5, Number.MAX_SAFE_INTEGER + 2]) assert.not.ok('issue' in buildEnvelope({ id: 'e', type: 'pr.merged', ts: new Date(), project: null, raw: { issue } }));
});

test('strings are cut: summaries and free text to 1000 characters, other strings to 500 (whole code points)', () => {
  const e = buildEnvelope({
    id: 'e',
    type: 'slot.stopped',
    ts: new Date(),
    project: null,
    raw: { slot: 's'.repeat(900), data: { summary: 'a'.repeat(1500), reason: 'b'.repeat(1200) } },
  });
  assert.is(e.slot!.length, 500);
  assert.is((e.data.summary as string).length, 1000);
  assert.is((e.data.reason as string).length, 1000);
  const title = buildEnvelope({ id: 'e', type: 'pr.opened', ts: new Date(), project: null, raw: { data: { title: '😀'.repeat(600) } } }).data.title as string;
  assert.is(Array.from(title).length, 500);
  assert.is(title, '😀'.repeat(500), 'no half surrogate pair at the end');
  assert.is(cut('abc', 5), 'abc');
  const longUrl = `https://github.com/acme/widgets/pull/1?${'x'.repeat(600)}`;
  assert.equal(buildEnvelope({ id: 'e', type: 'pr.merged', ts: new Date(), project: null, raw: { pr: { number: 1, url: longUrl } } }).data.pr, { number: 1 });
});

const ev = (id: string, kind: string, payload: Record<string, unknown>): RunnerEvent => ({ id, source: 'fleet', kind, ts: '2026-03-04T05:06:07.089Z', payload });

test('runner events: only catalogue kinds of the runner’s own projects become envelopes, with stable ids; pr.* go through the PR state instead', () => {
  const projects = new Map([['p1', 'acme/widgets']]);
  const events = [
    ev('1', 'slot.checkpoint', { project: 'p1', slot: 'w1', issue: 9, data: { pr: { number: 3, url: 'https://github.com/acme/widgets/pull/3' }, checkpoint: 'pr_open' } }),
    ev('2', 'llm.request', { project: 'p1', model: 'opus', prompt: 'hi' }),
    ev('3', 'tool.call', { project: 'p1', tool: 'Bash' }),
    ev('4', 'pane.text', { project: 'p1', text: 'screen' }),
    ev('5', 'session.meta', { project: 'p1' }),
    ev('6', 'runner.started', { version: '0.1.0' }),
    ev('7', 'webhook.test', { project: 'p1' }),
    ev('8', 'schedule.failed', { project: 'p1' }),
    ev('9', 'pr.merged', { project: 'someone-elses' }),
    ev('10', 'pr.merged', {}),
    ev('11', 'orchestrator.started', { project: 'p1', data: { profile: 'claude' } }),
    ev('12', 'pr.opened', { project: 'p1', data: { pr: { number: 4 }, title: 'the server emits it (codehost/pulls.ts)' } }),
  ];
  const out = runnerEnvelopes('r1', events, projects);
  assert.equal(out.map((e) => e.type), ['slot.checkpoint', 'orchestrator.started']);
  assert.equal(out[0], {
    id: eventId('runner', 'r1', '1', 'slot.checkpoint'),
    type: 'slot.checkpoint',
    ts: '2026-03-04T05:06:07.089Z',
    project: { id: 'p1', repo: 'acme/widgets' },
    slot: 'w1',
    issue: 9,
    data: { pr: { number: 3, url: 'https://github.com/acme/widgets/pull/3' }, checkpoint: 'pr_open' },
  });
  assert.match(out[0].id, /^evt_[0-9a-f]{32}$/);
  // The same event (re-sent) gives the same envelope, byte for byte; another runner's does not collide.
  assert.is(JSON.stringify(runnerEnvelopes('r1', events, projects)), JSON.stringify(out));
  assert.is.not(runnerEnvelopes('r2', events, projects)[0].id, out[0].id);
});

test('signature: fixed vector; key is the secret text as UTF-8; t=<unix>,v1=<hex>', () => {
  const body = '{"id":"evt_1","type":"webhook.test"}';
  assert.is(signature('c2VjcmV0LXNpZ25pbmcta2V5', 1700000000, body), 't=1700000000,v1=d4d8fb129b3555967dbaac98bc3bf51920c5b8490faf97f7d362bfd2444b7ff2');
  const h = deliveryHeaders({ eventType: 'webhook.test', deliveryId: 'd1', secret: 'c2VjcmV0LXNpZ25pbmcta2V5', timestamp: 1700000000, body, version: '0.1.0' });
  assert.is(h['X-Svc-Event'], 'webhook.test');
  assert.is(h['X-Svc-Delivery'], 'd1');
  assert.is(h['X-Agent-Fleet-Signature'], h['X-Svc-Signature']);
  const later = deliveryHeaders({ eventType: 'webhook.test', deliveryId: 'd1', secret: 's', timestamp: 1, body, version: '0.16.0' });
  assert.equal(Object.keys(later).filter((k) => k.startsWith('X-Agent-Fleet-')), [], 'legacy names stop at 0.16.0');
  assert.ok(sendsLegacyHeaders('0.15.9'));
  assert.not.ok(sendsLegacyHeaders('0.16.0'));
  assert.is(compareVersions('0.9.0', '0.16.0'), -1);
});

test('retry schedule: 30 s doubling with ±20 % jitter; 8 attempts at most', () => {
  assert.equal([1, 2, 3, 4, 5, 6, 7].map((n) => retryDelay(n, () => 0.5)), [30_000, 60_000, 120_000, 240_000, 480_000, 960_000, 1_920_000]);
  assert.is(retryDelay(1, () => 0), 24_000);
  assert.is(retryDelay(1, () => 0.999999), 36_000);
  for (let i = 0; i < 1000; i++) {
    const d = retryDelay(3);
    assert.ok(d >= 96_000 && d <= 144_000);
  }
  assert.equal(afterAttempt(1, 8, false, 1000, () => 0.5), { status: 'pending', nextAttemptAt: 31_000 });
  assert.equal(afterAttempt(8, 8, false, 1000), { status: 'failed', nextAttemptAt: null });
  assert.equal(afterAttempt(8, 8, true, 1000), { status: 'delivered', nextAttemptAt: null });
  assert.equal(afterAttempt(9, 9, false, 1000), { status: 'failed', nextAttemptAt: null }, 'a redelivery gets exactly one more');
});

test('circuit table: closed → open at 10; open → half-open after 15 min; trial closes or reopens; resume closes', () => {
  let c: Circuit = resumed();
  for (let i = 1; i <= 9; i++) c = circuitAfterAttempt(c, `d${i}`, false, i);
  assert.equal([c.state, c.consecutiveFailures], ['closed', 9]);
  c = circuitAfterAttempt(c, 'd10', false, 10);
  assert.equal(c, { state: 'open', consecutiveFailures: 10, openedAt: 10, trialDeliveryId: null });
  assert.is(circuitAfterAttempt(c, 'late', true, 11), c, 'an attempt already in flight changes nothing while open');
  assert.not.ok(trialDue(c, 10 + 15 * 60_000 - 1));
  assert.ok(trialDue(c, 10 + 15 * 60_000));
  const half: Circuit = { ...c, state: 'half-open', trialDeliveryId: 't' };
  assert.is(circuitAfterAttempt(half, 'other', false, 20), half, 'only the trial moves a half-open circuit');
  assert.equal(circuitAfterAttempt(half, 't', true, 20), { state: 'closed', consecutiveFailures: 0, openedAt: null, trialDeliveryId: null });
  assert.equal(circuitAfterAttempt(half, 't', false, 20), { state: 'open', consecutiveFailures: 11, openedAt: 20, trialDeliveryId: null });
  assert.equal(resumed(), { state: 'closed', consecutiveFailures: 0, openedAt: null, trialDeliveryId: null });
  assert.equal(CIRCUIT_LABEL, { closed: 'Delivering', open: 'Delivery paused (receiver failing)', 'half-open': 'Trying the receiver again' });
});

test.run();

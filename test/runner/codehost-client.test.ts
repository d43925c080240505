// Unit tests of the code-host client (runner/codehost/client.ts) and the pull request change rules
// (runner/codehost/changes.ts) against the fake GitHub, with an injected clock where time matters.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import * as z from 'zod';
import { diffPulls } from '../../runner/codehost/changes.ts';
import type { OpenPull } from '../../runner/codehost/changes.ts';
import { CodeHostError, GitHubClient, nextLink } from '../../runner/codehost/client.ts';
import type { CodeHostStatus } from '../../runner/codehost/client.ts';
import { checkState, openPulls, overall } from '../../runner/codehost/github.ts';
import { titleAndBody, gitHost } from '../../runner/codehost/publish.ts';
import { githubFake } from '../fakes/github.ts';
import { assertMatchesGitHub } from '../fakes/openapi-check.ts';
import type { GitHubFake } from '../fakes/github.ts';

let gh: GitHubFake;
let now: number;
let statuses: CodeHostStatus[];
const client = (o: Partial<ConstructorParameters<typeof GitHubClient>[0]> = {}) =>
  new GitHubClient({ apiUrl: gh.url, token: async () => gh.token, now: () => now, onStatus: (s) => statuses.push(s), ...o });
const repoShape = z.object({ default_branch: z.string() });

test.before.each(async () => {
  gh = await githubFake();
  gh.repo('octo/app');
  now = Date.now();
  statuses = [];
});
test.after.each(() => gh.close());

test('ETag: the second GET sends If-None-Match, gets 304 with the cached body and spends no rate limit', async () => {
  const c = client();
  const a = await c.request('GET', '/repos/octo/app', { schema: repoShape });
  assert.equal([a.status, a.notModified, a.data.default_branch], [200, false, 'main']);
  const left = gh.rate.remaining;
  const b = await c.request('GET', '/repos/octo/app', { schema: repoShape });
  assert.equal([b.status, b.notModified, b.data.default_branch], [304, true, 'main']);
  assert.is(gh.rate.remaining, left);
  assert.equal(gh.requests.map((r) => [r.status, r.conditional]), [[200, false], [304, true]]);
  gh.repo('octo/app').defaultBranch = 'trunk';
  const d = await c.request('GET', '/repos/octo/app', { schema: repoShape });
  assert.equal([d.status, d.data.default_branch], [200, 'trunk'], 'a changed resource comes back whole');
  assert.equal([c.status.requests, c.status.notModified, c.status.state], [3, 1, 'ok']);
});

test('rate limit: 403 with remaining 0 blocks every request until x-ratelimit-reset without touching the network; then it goes again', async () => {
  const c = client();
  gh.rate.remaining = 0;
  gh.rate.reset = Math.floor(Date.now() / 1000) + 3600;
  const e = await c.request('GET', '/repos/octo/app', { schema: repoShape }).catch((x) => x);
  assert.ok(e instanceof CodeHostError && e.code === 'rate_limited' && e.status === 403);
  assert.equal(c.waiting(), { code: 'rate_limited', until: gh.rate.reset * 1000 });
  assert.is(statuses.at(-1)!.state, 'rate_limited');
  for (const urgent of [false, true]) {
    const again = await c.request('GET', '/repos/octo/app', { schema: repoShape, urgent }).catch((x) => x);
    assert.is(again.code, 'rate_limited');
  }
  assert.is(gh.requests.length, 1, 'no request while blocked, not even an urgent one');
  now = gh.rate.reset * 1000 + 1;
  gh.rate.remaining = 10;
  assert.is(c.waiting(), null);
  assert.is((await c.request('GET', '/repos/octo/app', { schema: repoShape })).status, 200);
  assert.is(statuses.at(-1)!.state, 'ok');
});

test('rate limit: a success that leaves 0 remaining blocks until the reset; 429 retry-after blocks for its seconds', async () => {
  const c = client();
  gh.rate.remaining = 1;
  gh.rate.reset = Math.floor(Date.now() / 1000) + 600;
  await c.request('GET', '/repos/octo/app', { schema: repoShape });
  assert.is(c.waiting()?.code, 'rate_limited');
  const c2 = client();
  gh.rate.remaining = 100;
  gh.rate.secondary = 30;
  await c2.request('GET', '/repos/octo/app', { schema: repoShape }).catch(() => {});
  assert.equal(c2.waiting(), { code: 'rate_limited', until: now + 30_000 });
});

test('failures back off exponentially (5xx, garbage, dropped connection, wrong shape); a good answer ends it; urgent requests still go', async () => {
  const c = client({ backoffBaseMs: 1000, backoffMaxMs: 8000 });
  const waits: number[] = [];
  for (const mode of ['500', 'garbage', 'drop', '500', '500'] as const) {
    gh.fail(1, mode);
    const e = await c.request('GET', '/repos/octo/app', { schema: repoShape, urgent: true }).catch((x) => x);
    assert.ok(e instanceof CodeHostError && ['http', 'garbage', 'unreachable'].includes(e.code), String(e));
    waits.push(c.waiting()!.until - now);
    const skipped = await c.request('GET', '/repos/octo/app', { schema: repoShape }).catch((x) => x);
    assert.is(skipped.code, 'backoff');
  }
  assert.equal(waits, [1000, 2000, 4000, 8000, 8000]);
  assert.is(gh.requests.length, 5, 'only the urgent requests reached the host');
  const wrong = await c.request('GET', '/repos/octo/app', { schema: z.object({ nope: z.string() }), urgent: true }).catch((x) => x);
  assert.is(wrong.code, 'garbage');
  assert.is(statuses.at(-1)!.state, 'backoff');
  assert.is((await c.request('GET', '/repos/octo/app', { schema: repoShape, urgent: true })).status, 200);
  assert.equal([c.waiting(), statuses.at(-1)!.state], [null, 'ok']);
});

test('pagination follows Link rel="next" on the same API only; a Link elsewhere is refused, the token never leaves', async () => {
  for (let i = 0; i < 250; i++) gh.addPull('octo/app', { title: `p${i}`, head: `b${i}` });
  const all = await openPulls(client(), 'octo/app');
  assert.equal([all.items.length, all.complete], [250, true]);
  assert.is(gh.requests.length, 3);
  assert.is(nextLink('<https://x/a?page=2>; rel="next", <https://x/a?page=9>; rel="last"'), 'https://x/a?page=2');
  assert.is(nextLink('<https://x/a?page=1>; rel="prev"'), null);
  const e = await client().request('GET', 'https://evil.example/steal', { schema: repoShape }).catch((x) => x);
  assert.is(e.code, 'garbage');
});

test('no token → no_token, nothing sent', async () => {
  const e = await client({ token: async () => null }).request('GET', '/repos/octo/app', { schema: repoShape }).catch((x) => x);
  assert.is(e.code, 'no_token');
  assert.is(gh.requests.length, 0);
  assert.is(statuses.at(-1)!.state, 'no_token');
});

const pr = (n: number, sha: string, checks: OpenPull['checks'] = []): OpenPull => ({ number: n, title: `t${n}`, branch: `b${n}`, url: `u${n}`, sha, checks });
const run = (state: 'pending' | 'passed' | 'failed') => [{ name: 'ci', state, url: null }];

test('changes: baseline silent; opened; passed → pending = restarted; same result on a new head = a new event; merged/closed; reopened numbers anew; ids stable', () => {
  let seen = diffPulls('p1', 'o/r', undefined, [pr(1, 'a')], []);
  assert.equal(seen.events, []);
  let step = diffPulls('p1', 'o/r', seen.next, [pr(1, 'a', run('passed')), pr(2, 'x')], []);
  assert.equal(step.events.map((e) => [e.id, e.event.type, e.event.data.state]), [['gh.p1.1.1.checks.1', 'pr.checks_changed', 'passed'], ['gh.p1.2.1.opened', 'pr.opened', undefined]]);
  const again = diffPulls('p1', 'o/r', seen.next, [pr(1, 'a', run('passed')), pr(2, 'x')], []);
  assert.equal(again.events.map((e) => e.id), step.events.map((e) => e.id), 'the same change gets the same ids (a crash before recording)');
  seen = step;
  assert.equal(diffPulls('p1', 'o/r', seen.next, [pr(1, 'a', run('passed')), pr(2, 'x')], []).events, [], 'nothing changed');
  step = diffPulls('p1', 'o/r', seen.next, [pr(1, 'b', run('pending')), pr(2, 'x')], []);
  assert.equal(step.events.map((e) => e.event.data.state), ['restarted']);
  step = diffPulls('p1', 'o/r', step.next, [pr(1, 'b', run('passed')), pr(2, 'x')], []);
  assert.equal(step.events.map((e) => [e.id, e.event.data.state]), [['gh.p1.1.1.checks.3', 'passed']]);
  step = diffPulls('p1', 'o/r', step.next, [pr(1, 'c', run('passed')), pr(2, 'x')], []);
  assert.equal(step.events.map((e) => e.event.data.state), ['passed'], 'a new head that passes is a new result');
  step = diffPulls('p1', 'o/r', step.next, [], [{ number: 1, merged: true, title: 't1', url: 'u1' }, { number: 2, merged: false, title: 't2', url: 'u2' }]);
  assert.equal(step.events.map((e) => [e.id, e.event.type]), [['gh.p1.1.1.merged', 'pr.merged'], ['gh.p1.2.1.closed', 'pr.closed']]);
  step = diffPulls('p1', 'o/r', step.next, [pr(2, 'y')], []);
  assert.equal(step.events.map((e) => e.id), ['gh.p1.2.2.opened'], 'a reopened pull request opens again with a new id');
  assert.equal(diffPulls('p1', 'o/other', step.next, [pr(5, 'z')], []).events, [], 'a changed repo is a new baseline');
});

test('checks: check runs and statuses map to one state; title and body from the report; the git host the token may go to', () => {
  assert.equal([checkState('queued', null), checkState('in_progress', null), checkState('completed', 'success'), checkState('completed', 'skipped'), checkState('completed', 'timed_out')], ['pending', 'pending', 'passed', 'passed', 'failed']);
  assert.equal([checkState('success', null), checkState('failure', null), checkState('error', null), checkState('pending', null)], ['passed', 'failed', 'failed', 'pending']);
  assert.equal([overall([]), overall(run('passed')), overall([...run('passed'), ...run('pending')]), overall([...run('failed'), ...run('pending')])], ['none', 'passed', 'pending', 'failed']);
  assert.equal(titleAndBody('\n## Fixed the parser\nDetails.', 'fix', 'r1'), { title: 'Fixed the parser', body: '## Fixed the parser\nDetails.\n\n---\nOpened by svc skill run `r1` (skill `fix`).' });
  assert.is(titleAndBody(null, 'fix', 'r1').title, 'fix: svc skill run r1');
  assert.equal([gitHost('https://api.github.com'), gitHost('https://ghe.example.com/api/v3')], ['github.com', 'ghe.example.com']);
});

test("every request svc made to the fake GitHub and every answer it gave match GitHub's OpenAPI description", () => assertMatchesGitHub());

test.run();

// Runner tags and reported capacity (issue #37; docs/runner.md "Runner pools"): instance admins set tags
// with PATCH /api/runners/:runnerId (stored each once, sorted; audited), a bad tag or more than 16 is a
// 400 naming `tags`, a project admin is refused; `svc-runner pair --tags` stores them at pairing; the
// list shows tags, maxConcurrentRuns and runningRuns (null until the runner reports its capacity).
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { startServer } from '../helpers/server.ts';
import type { RunningServer } from '../helpers/server.ts';
import { callAs, makeUser } from '../helpers/users.ts';

let server: RunningServer;
const call = (path: string, init: { method?: string; json?: unknown; token?: string } = {}) => callAs(server, path, init);
test.before(async () => {
  server = await startServer({ admin: true });
});
test.after(async () => server?.cleanup());

const listed = async (id: string) => ((await call('/api/runners')).body.runners as { id: string; tags: string[]; maxConcurrentRuns: number | null; runningRuns: number | null }[]).find((r) => r.id === id)!;

test('PATCH tags: stored deduplicated and sorted, shown in the list and the detail, audited; capacity null until reported', async () => {
  const id = (await call('/api/runners', { method: 'POST', json: { name: 'tagged' } })).body.runner.id;
  assert.equal((await listed(id)).tags, []);
  const res = await call(`/api/runners/${id}`, { method: 'PATCH', json: { tags: ['linux', 'gpu', 'linux'] } });
  assert.is(res.status, 200, JSON.stringify(res.body));
  assert.equal(res.body.tags, ['gpu', 'linux']);
  const row = await listed(id);
  assert.equal(row.tags, ['gpu', 'linux']);
  assert.is(row.maxConcurrentRuns, null);
  assert.is(row.runningRuns, null);
  assert.equal((await call(`/api/runners/${id}`)).body.tags, ['gpu', 'linux']);
  const audit = await call(`/api/audit?action=runner.update&targetId=${id}`);
  assert.is(audit.body.records.length, 1);
  assert.equal(audit.body.records[0].diff, { before: { tags: [] }, after: { tags: ['gpu', 'linux'] } });
  assert.is((await call(`/api/runners/${id}`, { method: 'PATCH', json: { tags: [] } })).status, 200);
  assert.equal((await listed(id)).tags, []);
});

test('bad tags: an uppercase or spaced tag and 17 tags → 400 naming tags; an unknown runner → 404; a non-admin → 403', async () => {
  const id = (await call('/api/runners', { method: 'POST', json: { name: 'strict' } })).body.runner.id;
  for (const tags of [['GPU'], ['two words'], Array.from({ length: 17 }, (_, i) => `t${i}`)]) {
    const res = await call(`/api/runners/${id}`, { method: 'PATCH', json: { tags } });
    assert.is(res.status, 400, JSON.stringify(tags));
    assert.ok(Object.keys(res.body.error.fields).some((k) => k.startsWith('tags')), JSON.stringify(res.body));
  }
  assert.is((await call(`/api/runners/${id}`, { method: 'PATCH', json: { tags: Array.from({ length: 16 }, (_, i) => `t${i}`) } })).status, 200, '16 are fine');
  assert.is((await call('/api/runners/00000000-0000-0000-0000-000000000000', { method: 'PATCH', json: { tags: ['x'] } })).status, 404);
  const someone = await makeUser(server, 'someone');
  assert.is((await call(`/api/runners/${id}`, { method: 'PATCH', json: { tags: ['x'] }, token: someone.token })).status, 403);
});

test('pairing with tags stores them (sorted, each once); pairing again without tags keeps them; a bad tag at pairing → 400', async () => {
  const made = (await call('/api/runners', { method: 'POST', json: { name: 'paired-tags' } })).body;
  const pair = (code: string, tags?: unknown) =>
    fetch(`${server.url}/runners/pair`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ code, hostname: 'h', version: '0.1.0', target: 'linux-x64', ...(tags ? { tags } : {}) }) });
  assert.is((await pair(made.code, ['Bad tag'])).status, 400);
  assert.is((await pair(made.code, ['linux', 'arm', 'arm'])).status, 200);
  assert.equal((await listed(made.runner.id)).tags, ['arm', 'linux']);
  const again = (await call(`/api/runners/${made.runner.id}/pairing-code`, { method: 'POST' })).body;
  assert.is((await pair(again.code)).status, 200);
  assert.equal((await listed(made.runner.id)).tags, ['arm', 'linux'], 'kept');
});

test.run();

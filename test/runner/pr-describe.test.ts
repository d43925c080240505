// pr.describe (docs/cost.md, "The cost in the pull request's description"; runner/commands/pr.ts): against
// the fake GitLab — the merge request's description gets the cost block through PUT …/merge_requests/:iid
// {description}, the rest of the description byte for byte; the same block again writes nothing; a new
// block replaces only the marked text; an unknown MR is not_found.
import { mkdirSync, mkdtempSync, realpathSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { COST_BLOCK_END, COST_BLOCK_START } from '../../protocol/cost-block.ts';
import { prDescribe } from '../../runner/commands/pr.ts';
import type { CommandContext } from '../../runner/commands/context.ts';
import { validateConfig } from '../../runner/config.ts';
import type { ProjectEntry } from '../../runner/config.ts';
import { githubFake } from '../fakes/github.ts';
import { gitlabFake } from '../fakes/gitlab.ts';

const PATH = 'acme/platform/svc-app';

test('GitLab: the block is written into the MR description, the rest untouched; unchanged text is not written again', async () => {
  const gl = await gitlabFake({ prefix: '/gitlab' });
  const dir = realpathSync(mkdtempSync(join(tmpdir(), 'svc-prdesc-')));
  try {
    gl.project(PATH);
    const root = join(dir, 'app');
    mkdirSync(root, { recursive: true });
    const projects: ProjectEntry[] = [{ id: 'p1', root, host: { kind: 'gitlab', baseUrl: gl.url, path: PATH } }];
    const ctx: CommandContext = {
      config: validateConfig('runner.json', { profiles: [], codehost: { apiUrl: 'http://127.0.0.1:9/never' } }),
      projects: () => projects,
      env: { GITLAB_TOKEN: gl.token, XDG_STATE_HOME: join(dir, 'state'), HOME: dir },
      startedAt: Date.now(),
    };
    const mr = gl.addMr(PATH, { title: 'Change', source: 'svc/w1/issue-7', sha: 'c'.repeat(40) });
    const person = 'Fixes #7.\r\n\r\n- one\r\n- two  \r\n';
    mr.description = person;
    const puts = () => gl.requests.filter((r) => r.method === 'PUT' && r.path.endsWith(`/merge_requests/${mr.iid}`));

    assert.equal(await prDescribe({ projectId: 'p1', number: mr.iid, block: 'This pull request cost $1.00 over 1 agent session.' }, ctx), { pr: mr.iid, changed: true });
    assert.is(puts().length, 1);
    const first = `${person}\r\n${COST_BLOCK_START}\r\nThis pull request cost $1.00 over 1 agent session.\r\n${COST_BLOCK_END}\r\n`;
    assert.equal(puts()[0].body, { description: first });
    assert.is(mr.description, first);

    assert.equal(await prDescribe({ projectId: 'p1', number: mr.iid, block: 'This pull request cost $1.00 over 1 agent session.' }, ctx), { pr: mr.iid, changed: false });
    assert.is(puts().length, 1);

    mr.description = `${first}A person's note after the block.\r\n`;
    await prDescribe({ projectId: 'p1', number: mr.iid, block: 'This pull request cost $4.10 over 3 agent sessions.' }, ctx);
    assert.is(mr.description, `${person}\r\n${COST_BLOCK_START}\r\nThis pull request cost $4.10 over 3 agent sessions.\r\n${COST_BLOCK_END}\r\nA person's note after the block.\r\n`);

    const missing = await prDescribe({ projectId: 'p1', number: 999, block: 'x' }, ctx).then(() => null, (e) => e as Error & { code?: string });
    assert.is(missing?.code, 'not_found');
  } finally {
    await gl.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('GitHub: PATCH /repos/:o/:r/pulls/:n {body} with the block alone in an empty body, then replaced, the rest kept', async () => {
  const gh = await githubFake();
  const dir = realpathSync(mkdtempSync(join(tmpdir(), 'svc-prdesc-')));
  try {
    const root = join(dir, 'app');
    mkdirSync(root, { recursive: true });
    const pr = gh.addPull('acme/app', { title: 'Change', head: 'svc/w1/issue-7' });
    const projects: ProjectEntry[] = [{ id: 'p1', root, repo: 'acme/app' }];
    const ctx: CommandContext = {
      config: validateConfig('runner.json', { profiles: [], codehost: { apiUrl: gh.url } }),
      projects: () => projects,
      env: { GITHUB_TOKEN: gh.token, XDG_STATE_HOME: join(dir, 'state'), HOME: dir },
      startedAt: Date.now(),
    };
    const patches = () => gh.requests.filter((r) => r.method === 'PATCH' && r.path === `/repos/acme/app/pulls/${pr.number}`);
    assert.equal(await prDescribe({ projectId: 'p1', number: pr.number, block: 'cost one' }, ctx), { pr: pr.number, changed: true });
    assert.equal(patches().map((r) => r.body), [{ body: `${COST_BLOCK_START}\ncost one\n${COST_BLOCK_END}` }]);
    pr.body = `Summary by a person.\n\n${pr.body}\n\nFooter.`;
    await prDescribe({ projectId: 'p1', number: pr.number, block: 'cost two' }, ctx);
    assert.is(pr.body, `Summary by a person.\n\n${COST_BLOCK_START}\ncost two\n${COST_BLOCK_END}\n\nFooter.`);
    assert.is(patches().length, 2);
  } finally {
    await gh.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

test.run();

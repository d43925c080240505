// The orchestrator's merge step (svc-runner pr-merge) for a GitLab project, then a GitHub one (docs/gitlab.md; runner/commands/pr.ts prMerge):
// against the fake GitLab — refused without svc's approval signal, GitLab's refusal (approval rules)
// said as the reason with nothing merged, then merged through PUT …/merge.
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { prMerge } from '../../runner/commands/pr.ts';
import type { CommandContext } from '../../runner/commands/context.ts';
import { validateConfig } from '../../runner/config.ts';
import type { ProjectEntry } from '../../runner/config.ts';
import { githubFake } from '../fakes/github.ts';
import { gitlabFake } from '../fakes/gitlab.ts';

const PATH = 'acme/platform/svc-app';

test('merge: needs the approve signal; GitLab refusing says why and merges nothing; then merged through the API', async () => {
  const gl = await gitlabFake({ prefix: '/gitlab' });
  const dir = realpathSync(mkdtempSync(join(tmpdir(), 'svc-glmerge-')));
  try {
    gl.project(PATH);
    const root = join(dir, 'app');
    mkdirSync(join(root, '.svc', 'pr'), { recursive: true });
    const projects: ProjectEntry[] = [{ id: 'p1', root, host: { kind: 'gitlab', baseUrl: gl.url, path: PATH } }];
    const ctx: CommandContext = {
      config: validateConfig('runner.json', { profiles: [], codehost: { apiUrl: 'http://127.0.0.1:9/never' } }),
      projects: () => projects,
      env: { GITLAB_TOKEN: gl.token, XDG_STATE_HOME: join(dir, 'state'), HOME: dir },
      startedAt: Date.now(),
    };
    const mr = gl.addMr(PATH, { title: 'Change', source: 'svc/w1/issue-7', sha: 'c'.repeat(40) });
    mr.requiredApprovals = 1;
    const merges = () => gl.requests.filter((r) => r.method === 'PUT' && r.path.endsWith(`/merge_requests/${mr.iid}/merge`)).length;

    const unapproved = await prMerge({ projectId: 'p1', number: mr.iid }, ctx).then(() => null, (e) => e as Error & { code?: string });
    assert.match(unapproved?.message ?? '', /not approved in svc/);
    assert.is(merges(), 0, 'no approval signal: GitLab is not asked');

    writeFileSync(join(root, '.svc', 'pr', `${mr.iid}.json`), JSON.stringify({ v: 1, pr: mr.iid, decision: 'approve', time: new Date().toISOString() }));
    const refused = await prMerge({ projectId: 'p1', number: mr.iid }, ctx).then(() => null, (e) => e as Error & { code?: string });
    assert.match(refused?.message ?? '', /approvals missing/);
    assert.is(refused?.code, 'codehost_405');
    assert.is(mr.state, 'opened');

    mr.approvedBy.push('ann');
    assert.equal(await prMerge({ projectId: 'p1', number: mr.iid }, ctx), { pr: mr.iid, merged: true, sha: 'e'.repeat(40) });
    assert.is(mr.state, 'merged');
    assert.equal(gl.unexpected, []);
  } finally {
    await gl.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

test("GitHub: the same step squash-merges through the API and deletes the head branch; branch protection's refusal is the reason", async () => {
  const gh = await githubFake();
  const dir = realpathSync(mkdtempSync(join(tmpdir(), 'svc-ghmerge-')));
  try {
    const root = join(dir, 'app');
    mkdirSync(join(root, '.svc', 'pr'), { recursive: true });
    const projects: ProjectEntry[] = [{ id: 'p1', root, repo: 'acme/app' }];
    const ctx: CommandContext = {
      config: validateConfig('runner.json', { profiles: [], codehost: { apiUrl: gh.url } }),
      projects: () => projects,
      env: { GH_TOKEN: gh.token, XDG_STATE_HOME: join(dir, 'state'), HOME: dir, PATH: '/nonexistent' },
      startedAt: Date.now(),
    };
    const pr = gh.addPull('acme/app', { title: 'Change', head: 'svc/w1/issue-7' });
    pr.mergeBlocked = 'At least 1 approving review is required by reviewers with write access.';
    writeFileSync(join(root, '.svc', 'pr', `${pr.number}.json`), JSON.stringify({ v: 1, pr: pr.number, decision: 'approve', time: new Date().toISOString() }));
    const refused = await prMerge({ projectId: 'p1', number: pr.number }, ctx).then(() => null, (e) => e as Error & { code?: string });
    assert.match(refused?.message ?? '', /branch protection.*At least 1 approving review is required/);
    assert.is(refused?.code, 'codehost_405');
    assert.equal([pr.state, gh.repo('acme/app').deletedBranches], ['open', undefined]);

    delete pr.mergeBlocked;
    assert.equal(await prMerge({ projectId: 'p1', number: pr.number }, ctx), { pr: pr.number, merged: true, sha: 'f'.repeat(40), branchDeleted: true });
    assert.equal([pr.merged, gh.repo('acme/app').deletedBranches], [true, ['svc/w1/issue-7']]);
    const put = gh.requests.find((r) => r.method === 'PUT')!;
    assert.equal([put.path, put.body, put.token], [`/repos/acme/app/pulls/${pr.number}/merge`, { merge_method: 'squash' }, gh.token]);
    assert.equal(gh.openapi.mismatches, []);
  } finally {
    await gh.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

test.run();

// `glab auth status` as the runner's GitLab token source (issue 42; docs/gitlab.md "Without a stored
// token"): with no token from the server and no GITLAB_TOKEN, the runner asks a `glab` on PATH for the
// instance's token (`glab auth status --hostname <host> --show-token`, which prints it on stderr);
// GITLAB_TOKEN and the server's token come first; glab failing or absent is no_token naming the ways.
// A fake `glab` script; the fake GitLab checks the token it is given.
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync, existsSync, unlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { CodeHost } from '../../runner/codehost/poller.ts';
import { validateConfig } from '../../runner/config.ts';
import { gitlabFake } from '../fakes/gitlab.ts';

const PATH = 'acme/platform/app';

test('glab auth status: used only without the server token and GITLAB_TOKEN; its failure or absence is no_token', async () => {
  const gl = await gitlabFake({ prefix: '/gl' });
  const dir = mkdtempSync(join(tmpdir(), 'svc-glab-'));
  try {
    gl.project(PATH);
    gl.addIssue(PATH, { title: 'From glab', labels: ['svc'] });
    const args = join(dir, 'glab-args');
    const glab = (script: string) => {
      writeFileSync(join(dir, 'glab'), `#!/bin/sh\necho "$@" >> '${args}'\n${script}\n`);
      chmodSync(join(dir, 'glab'), 0o755);
    };
    // glab 1.x's answer: on stderr, the token after "Token:" with --show-token.
    glab(`[ "$1 $2" = "auth status" ] || exit 2\necho "127.0.0.1" >&2\necho "  ✓ Logged in to 127.0.0.1 as svc-bot (/home/x/.config/glab-cli/config.yml)" >&2\necho "  ✓ Token: ${gl.token}" >&2`);
    const project = { id: 'p1', root: dir, host: { kind: 'gitlab' as const, baseUrl: gl.url, path: PATH } };
    const host = (env: Record<string, string>) =>
      new CodeHost({ config: validateConfig('runner.json', { profiles: [], codehost: { apiUrl: 'http://127.0.0.1:9/never' } }), env: { PATH: dir, HOME: dir, XDG_STATE_HOME: dir, ...env }, projects: () => [project], append: () => {} });
    const issues = (h: CodeHost) => h.adapter(project).openIssues(PATH, { urgent: true });
    const lastToken = () => gl.requests.at(-1)?.token;

    const viaGlab = host({});
    assert.equal((await issues(viaGlab)).items.map((i) => i.title), ['From glab']);
    assert.is(lastToken(), gl.token);
    assert.equal(readFileSync(args, 'utf8').trim().split('\n'), ['auth status --hostname 127.0.0.1 --show-token']);
    assert.is(viaGlab.gitlabTokens.source, 'glab');
    await issues(viaGlab);
    assert.is(readFileSync(args, 'utf8').trim().split('\n').length, 1, "glab's answer is cached");

    unlinkSync(args);
    const own = 'glpat-runner-env-token-0000';
    await issues(host({ GITLAB_TOKEN: own })).catch(() => {});
    assert.is(lastToken(), own, 'GITLAB_TOKEN comes first');
    const served = host({});
    served.setServerTokens([{ kind: 'gitlab', repo: PATH, token: gl.token, expiresAt: new Date(Date.now() + 3_600_000).toISOString() }], true);
    await issues(served);
    assert.not.ok(existsSync(args), 'neither asks glab');

    glab('echo "x  127.0.0.1: api call failed: 401 Unauthorized" >&2; exit 1');
    const failed = await issues(host({})).then(() => null, (e: Error & { code?: string }) => e);
    assert.is(failed?.code, 'no_token');
    assert.match(failed?.message ?? '', /glab auth login/);
    rmSync(join(dir, 'glab'));
    const absent = await issues(host({})).then(() => null, (e: Error & { code?: string }) => e);
    assert.is(absent?.code, 'no_token');
    assert.equal(gl.unexpected, []);
  } finally {
    await gl.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

test.run();

// `svc-runner pair --tags a,b` (issue #37; docs/runner.md "Runner pools"), the real bundle against the fake
// API: the tags ride in the pair request (pairRequest.tags, duplicates dropped); a tag that is not a
// lowercase word, or too many, is refused with exit 2 naming it, before any request (the code not spent).
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { pairRequest } from '../../protocol/frames.ts';
import { startFakeServer } from './_fake-server.ts';
import type { FakeServer } from './_fake-server.ts';
import { runCli, sandbox } from './_harness.ts';
import type { Sandbox } from './_harness.ts';

let fake: FakeServer;
let sb: Sandbox;
test.before.each(async () => {
  fake = await startFakeServer();
  sb = sandbox();
});
test.after.each(async () => {
  await fake.stop();
  sb.cleanup();
});

test('--tags are sent with the pairing request (trimmed, duplicates dropped) and named in the answer; without --tags none are sent', async () => {
  const r = await runCli(sb, ['pair', '--server', fake.url, '--code', 'ABCD-2345', '--no-detect', '--tags', 'gpu, linux-x64,gpu']);
  assert.is(r.status, 0, r.stderr);
  assert.is(fake.pairRequests.length, 1);
  const body = fake.pairRequests[0].body;
  assert.equal(body.tags, ['gpu', 'linux-x64']);
  assert.is(pairRequest.safeParse(body).success, true, 'the shared schema takes it');
  assert.match(r.stdout, /as runner runner-paired-1 \(tags: gpu, linux-x64\)/);

  const plain = await runCli(sb, ['pair', '--server', fake.url, '--code', 'ABCD-2345', '--no-detect']);
  assert.is(plain.status, 0, plain.stderr);
  assert.is('tags' in fake.pairRequests[1].body, false);
});

test('a bad tag (or too many, or an empty --tags) is refused before any request, naming it', async () => {
  for (const [tags, said] of [
    ['gpu,GPU-Big', /tag "GPU-Big" must be a lowercase word/],
    ['gpu,-x', /tag "-x" must be a lowercase word/],
    [Array.from({ length: 17 }, (_, i) => `t${i}`).join(','), /at most 16 tags/],
    ['', /--tags needs a value/],
  ] as const) {
    const r = await runCli(sb, ['pair', '--server', fake.url, '--code', 'ABCD-2345', '--no-detect', '--tags', tags]);
    assert.is(r.status, 2, `${tags}: ${r.stderr}`);
    assert.match(r.stderr, said);
  }
  assert.is(fake.pairRequests.length, 0, 'no request was made');
});

test.run();

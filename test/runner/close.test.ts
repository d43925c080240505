// Runner connection close codes (spec: Runner connection, Runner exit codes): 4400/4401/4409 end the
// daemon with exit 78 and no reconnect; any other close reconnects with backoff 1 s, 2 s, 4 s …
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { startFakeServer } from './_fake-server.ts';
import type { FakeServer } from './_fake-server.ts';
import { killDaemons, pairedConfig, sandbox, sleep, startDaemon } from './_harness.ts';
import type { Sandbox } from './_harness.ts';

let fake: FakeServer;
let sb: Sandbox;
test.before.each(async () => {
  fake = await startFakeServer();
  sb = sandbox();
  sb.writeConfig(pairedConfig(fake.url));
});
test.after.each(async () => {
  await killDaemons();
  await fake.stop();
  sb.cleanup();
});

for (const [code, words] of [
  [4401, /invalid or was revoked: pair this machine again/],
  [4409, /newer pairing of this runner connected/],
  [4400, /protocol mismatch: upgrade the side that is behind/],
] as const) {
  test(`close ${code} at connect → exit 78, no reconnect, lock released`, async () => {
    fake.options.closeOnConnect = code;
    const d = startDaemon(sb);
    const { code: exit } = await d.exited;
    assert.is(exit, 78, d.output());
    assert.match(d.output(), new RegExp(`closed the connection for good \\(${code}`));
    assert.match(d.output(), words);
    await sleep(1500); // longer than the first backoff step
    assert.is(fake.conns.length, 1);
    assert.equal(sb.spoolEvents().length, 1, 'the runner.started event stays spooled for the next start');
  });
}

test('close 4401 while connected (token revoked) → exit 78', async () => {
  const d = startDaemon(sb);
  const conn = await fake.waitConns(1);
  await conn.next('hello');
  conn.ws.close(4401, 'token revoked');
  assert.is((await d.exited).code, 78);
  await sleep(1200);
  assert.is(fake.conns.length, 1);
});

test('any other close reconnects with exponential backoff (≈1 s, ≈2 s, ≈4 s), then stays', async () => {
  const d = startDaemon(sb);
  for (let n = 1; n <= 3; n++) {
    const conn = await fake.waitConns(n, 10_000);
    await conn.next('hello');
    conn.ws.close(n === 2 ? 1011 : 1001, 'server going away');
  }
  const fourth = await fake.waitConns(4, 10_000);
  await fourth.next('hello');
  const gaps = [1, 2, 3].map((i) => fake.conns[i].openedAt - fake.conns[i - 1].closedAt!);
  // 1 s, 2 s, 4 s with ±20 % jitter (never below 1 s), plus a little scheduling slack.
  assert.ok(gaps[0] >= 950 && gaps[0] <= 1600, `first gap ${gaps[0]}`);
  assert.ok(gaps[1] >= 1550 && gaps[1] <= 2800, `second gap ${gaps[1]}`);
  assert.ok(gaps[2] >= 3150 && gaps[2] <= 5200, `third gap ${gaps[2]}`);
  assert.match(d.output(), /connection down \(1011: server going away\); reconnecting in \d/);
  assert.is(d.proc.exitCode, null);
  // Still fully working on the new connection.
  assert.is((await fourth.command('runner.ping')).ok, true);
  assert.equal(await d.kill(), { code: 0, signal: null });
});

test('a server that is down at start is retried with backoff, not an exit', async () => {
  const url = fake.url;
  await fake.stop();
  const d = startDaemon(sb);
  await d.waitFor(/connection down .*reconnecting in/, 5000);
  await sleep(1500);
  assert.is(d.proc.exitCode, null);
  assert.ok(url);
  await d.kill();
});

test.run();

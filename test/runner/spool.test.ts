// The spool (spec: Runner to server events; DESIGN §3): durable before sending, removed only after
// the ack, resent after kill -9, ordered per source, batched by MAX_BATCH.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { MAX_BATCH } from '../../protocol/frames.ts';
import { startFakeServer } from './_fake-server.ts';
import type { FakeServer } from './_fake-server.ts';
import { killDaemons, pairedConfig, runCli, sandbox, sleep, startDaemon, waitUntil } from './_harness.ts';
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

test('every event is in the spool before it is sent, and is removed after the ack', async () => {
  const onDisk: boolean[] = [];
  fake.options.onEvents = (events) => {
    const ids = new Set(sb.spoolIds());
    for (const e of events) onDisk.push(ids.has(e.id));
  };
  const d = startDaemon(sb);
  const conn = await fake.waitConns(1);
  await conn.next('hello');
  const first = await conn.next('events');
  assert.equal(first.events.map((e: any) => e.kind), ['runner.started']);
  assert.is(first.events[0].source, 'runner');
  assert.match(first.events[0].id, /^runner-test\.[a-z0-9]+\.[a-z0-9]{6}\.1$/);
  await waitUntil(() => sb.spoolFiles().length === 0, 5000, 'the spool to empty after the ack');
  assert.equal(onDisk, [true]);
  await d.kill();
});

test('without an ack nothing leaves the spool; after kill -9 and a restart the events are sent again and removed once acked', async () => {
  fake.options.autoAck = false;
  const d1 = startDaemon(sb);
  const conn1 = await fake.waitConns(1);
  const sent = await conn1.next('events');
  const firstId = sent.events[0].id;
  const emitted = await runCli(sb, ['spool-append', 'test.item', '--source', 'tests/a', '--count', '5']);
  assert.is(emitted.status, 0, emitted.stderr);
  assert.is(sb.spoolEvents().length, 6);
  await sleep(700); // time for any (wrong) removal
  assert.is(sb.spoolEvents().length, 6, 'no ack: still spooled');
  assert.ok(sb.spoolIds().includes(firstId));

  const killed = await d1.kill('SIGKILL');
  assert.is(killed.signal, 'SIGKILL');
  fake.options.autoAck = true;
  const d2 = startDaemon(sb); // the dead daemon's lock is stale and taken over
  await fake.waitConns(2);
  await waitUntil(() => sb.spoolFiles().length === 0, 10_000, () => `the spool to empty; left ${sb.spoolFiles().length}\n${d2.output()}`);
  // Each id at least once; the one from before the kill twice (sent, not acked, sent again).
  assert.ok((fake.seen.get(firstId) ?? 0) >= 2, 'the unacked event was sent again');
  const kinds = fake.received.map((e) => e.kind);
  assert.is(kinds.filter((k) => k === 'test.item').length >= 5, true);
  assert.is(new Set(fake.received.filter((e) => e.kind === 'runner.started').map((e) => e.id)).size, 2, 'one runner.started per start');
  const second = fake.received.find((e) => e.kind === 'runner.started' && e.id !== firstId);
  assert.is(second?.payload.waiting, 6, 'the second start found 6 events waiting');
  await d2.kill();
});

test('events are sent in order per source, in batches of at most MAX_BATCH, all acked', async () => {
  const total = 2 * MAX_BATCH + 123;
  const a = await runCli(sb, ['spool-append', 'test.bulk', '--source', 'tests/a', '--count', String(total), '--payload', '{"pad":"xxxxxxxxxxxxxxxx"}']);
  assert.is(a.status, 0, a.stderr);
  const b = await runCli(sb, ['spool-append', 'test.bulk', '--source', 'tests/b', '--count', '50']);
  assert.is(b.status, 0);
  const d = startDaemon(sb);
  const conn = await fake.waitConns(1);
  await waitUntil(() => sb.spoolFiles().length === 0, 20_000, () => `the spool to empty; left ${sb.spoolFiles().length}`);
  const batches = conn.frames.filter((f) => f.type === 'events');
  assert.ok(batches.every((f) => f.events.length <= MAX_BATCH));
  assert.ok(batches.length >= 3);
  for (const source of ['tests/a', 'tests/b']) {
    const seqs = fake.received.filter((e) => e.source === source).map((e) => e.payload.seq);
    assert.equal(seqs, [...Array(source === 'tests/a' ? total : 50).keys()], `${source} in order, each once`);
  }
  await d.kill();
});

test('events emitted while the daemon runs are picked up and sent', async () => {
  const d = startDaemon(sb);
  const conn = await fake.waitConns(1);
  await conn.next('events'); // runner.started
  const r = await runCli(sb, ['spool-append', 'test.live', '--payload', '{"n":1}']);
  assert.is(r.status, 0);
  await waitUntil(() => fake.received.some((e) => e.kind === 'test.live'), 15_000, 'the live event');
  await waitUntil(() => sb.spoolFiles().length === 0, 5000, 'the spool to empty');
  await d.kill();
});

test('a batch the server drops as over its frame rate (error rate_limited) is sent again within seconds, not after the 60 s ack timeout', async () => {
  let dropped: string[] | null = null;
  let droppedAt = 0;
  fake.options.onEvents = (events) => {
    if (dropped || !events.some((e) => e.kind === 'test.dropped')) return;
    // What the hub does past 100 frames/s: no ack for the frame, an error frame instead.
    dropped = events.map((e) => e.id);
    droppedAt = Date.now();
    fake.options.autoAck = false;
    setImmediate(() => {
      fake.options.autoAck = true;
      fake.conns.at(-1)!.send({ type: 'error', code: 'rate_limited', message: 'more than 100 frames/s; frames are being dropped' });
    });
  };
  const d = startDaemon(sb);
  const conn = await fake.waitConns(1);
  await conn.next('events'); // runner.started
  assert.is((await runCli(sb, ['spool-append', 'test.dropped', '--count', '3'])).status, 0);
  await waitUntil(() => dropped !== null, 15_000, 'the batch to reach the server');
  await waitUntil(() => dropped!.every((id) => (fake.seen.get(id) ?? 0) >= 2), 20_000, () => `the dropped batch sent again\n${d.output()}`);
  const again = Date.now() - droppedAt;
  assert.ok(again < 15_000, `sent again after ${again} ms`);
  await waitUntil(() => sb.spoolFiles().length === 0, 5000, 'the spool to empty once acked');
  assert.match(d.output(), /rate_limited/);
  await d.kill();
});

test('a spool file that is not an event is moved to spool/corrupt and the rest still flows', async () => {
  await runCli(sb, ['spool-append', 'test.ok']);
  const { writeFileSync } = await import('node:fs');
  writeFileSync(join(sb.spoolDir, '0000000000001.00000001.zzzzzz.json'), '{"half":');
  const d = startDaemon(sb);
  await waitUntil(() => fake.received.some((e) => e.kind === 'test.ok'), 10_000, 'the good event');
  await waitUntil(() => sb.spoolFiles().length === 0, 5000, 'the spool to empty');
  assert.is(readFileSync(join(sb.spoolDir, 'corrupt', '0000000000001.00000001.zzzzzz.json'), 'utf8'), '{"half":');
  assert.match(d.output(), /spool file unreadable; moved to spool\/corrupt/);
  await d.kill();
});

test('kill -9 mid-batch: two batches of different sources in flight at once, one partly acked; after the restart nothing is lost, only ids of a file not wholly acked come again (same id, same content: the server stores them once), and each source stays in order', async () => {
  fake.options.autoAck = false;
  for (const source of ['tests/a', 'tests/b']) {
    const r = await runCli(sb, ['spool-append', 'test.kill', '--source', source, '--count', '1000', '--payload', '{"pad":"yyyyyyyy"}']);
    assert.is(r.status, 0, r.stderr);
  }
  assert.is(sb.spoolFiles().length, 4, 'two files of 500 per append of 1000');
  const d1 = startDaemon(sb);
  const conn1 = await fake.waitConns(1);
  // The first file of each source, then runner.started (spooled at the start, so the newest): three batches in flight before any ack.
  await waitUntil(() => conn1.frames.filter((f) => f.type === 'events').length >= 3, 15_000, () => `three batches in flight\n${d1.output()}`);
  const frames = conn1.frames.filter((f) => f.type === 'events');
  const sourcesOf = (f: any) => [...new Set(f.events.map((e: any) => e.source))];
  assert.equal(frames.map(sourcesOf), [['tests/a'], ['tests/b'], ['runner']], 'never two batches of one source in flight');
  const [a, b] = frames;
  assert.equal(a.events.map((e: any) => e.payload.seq), [...Array(500).keys()]);
  // Ack half of tests/a's batch and all of tests/b's: b's first file goes, a's first file stays.
  const ackedA = a.events.slice(0, 250).map((e: any) => e.id);
  conn1.send({ type: 'ack', ids: ackedA });
  conn1.send({ type: 'ack', ids: b.events.map((e: any) => e.id) });
  await waitUntil(() => sb.spoolEvents().length === 1 + 1500, 10_000, () => `b's first file removed; ${sb.spoolEvents().length} left`);
  assert.is(sb.spoolFiles().length, 4, "runner.started, a's two files (one partly acked) and b's second");
  const firstSend = new Map([...a.events, ...b.events].map((e: any) => [e.id, JSON.stringify(e)]));
  assert.is((await d1.kill('SIGKILL')).signal, 'SIGKILL');

  const before = fake.received.length;
  fake.options.autoAck = true;
  const d2 = startDaemon(sb);
  await fake.waitConns(2);
  await waitUntil(() => sb.spoolFiles().length === 0, 20_000, () => `the spool to empty; left ${sb.spoolEvents().length}\n${d2.output()}`);
  const after = fake.received.slice(before);
  for (const source of ['tests/a', 'tests/b']) {
    const all = fake.received.filter((e) => e.source === source);
    assert.equal(new Set(all.map((e) => e.payload.seq)).size, 1000, `${source}: none lost`);
    const again = after.filter((e) => e.source === source).map((e) => e.payload.seq);
    assert.equal(again, source === 'tests/a' ? [...Array(1000).keys()] : [...Array(500).keys()].map((i) => 500 + i), `${source}: resent in order, from the first file not wholly acked`);
  }
  // Duplicates are only ids sent before the kill, with the same content (the server's on conflict (runner_id, event_id) stores them once).
  const dup = after.filter((e) => firstSend.has(e.id));
  assert.is(dup.length, 500, "a's first file, all of it (250 of it acked)");
  for (const e of dup) assert.is(JSON.stringify(e), firstSend.get(e.id));
  assert.ok(ackedA.every((id: string) => dup.some((e) => e.id === id)));
  assert.not.ok(after.some((e) => b.events.some((x: any) => x.id === e.id)), "b's wholly acked file is not sent again");
  await d2.kill();
});

test('spool-append refuses bad arguments with exit 2', async () => {
  assert.is((await runCli(sb, ['spool-append'])).status, 2);
  assert.is((await runCli(sb, ['spool-append', 'Bad Kind'])).status, 2);
  assert.is((await runCli(sb, ['spool-append', 'ok.kind', '--payload', '[1]'])).status, 2);
  assert.is((await runCli(sb, ['spool-append', 'ok.kind', '--count', '0'])).status, 2);
  assert.equal(sb.spoolFiles(), []);
});

test.run();

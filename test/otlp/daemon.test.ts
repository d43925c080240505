// The OTLP receiver in the real runner daemon bundle (spec: Runner local OTLP receiver, runner.json
// `otlp.*`, Other behaviours): the OpenTelemetry SDK exports Claude Code api_request records to the
// daemon, which spools them as `llm.request` events with stable ids and sends them to the server;
// `otlp.enabled=false` means no listener; a taken port is logged and the daemon keeps running;
// `svc-runner status` says which of these it is.
import { createServer } from 'node:net';
import type { Server } from 'node:net';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { startFakeServer } from '../runner/_fake-server.ts';
import type { FakeServer } from '../runner/_fake-server.ts';
import { killDaemons, pairedConfig, runCli, sandbox, startDaemon, waitUntil } from '../runner/_harness.ts';
import type { Sandbox } from '../runner/_harness.ts';
import { SECRETS, apiRequestAttrs, freePort, raw, sdkClient, sensitiveEvents } from './_otlp.ts';

let fake: FakeServer;
let sb: Sandbox;
let port: number;
test.before.each(async () => {
  fake = await startFakeServer();
  sb = sandbox();
  port = await freePort();
});
test.after.each(async () => {
  await killDaemons();
  await fake.stop();
  sb.cleanup();
});

const llmEvents = () => fake.received.filter((e) => e.kind === 'llm.request');

test('SDK protobuf and JSON exporters → llm.request events on the spool and at the server, attributed by svc.* resource attributes; a resend is stored once; nothing private is sent', async () => {
  sb.writeConfig(pairedConfig(fake.url, { otlp: { http: port } }));
  const d = startDaemon(sb);
  await d.waitFor(new RegExp(`OTLP receiver listening on 127\\.0\\.0\\.1:${port}`));
  await fake.waitConns(1);

  const resource = { 'svc.project': 'proj-7', 'svc.slot': 'w1', 'svc.issue': '14', 'svc.run': 'run-abc' };
  const proto = sdkClient(`http://127.0.0.1:${port}`, 'proto', resource);
  for (const e of sensitiveEvents('sess-P')) proto.emit(e.body, e.attributes);
  proto.emit('claude_code.api_request', apiRequestAttrs({ sessionId: 'sess-P', requestId: 'req_proto_1', model: 'claude-sonnet-4-5-20250929', input: 12, output: 340, cacheRead: 5000, cacheCreation: 800, costUsd: 0.0215, durationMs: 4100 }));
  await proto.shutdown();
  const json = sdkClient(`http://127.0.0.1:${port}`, 'json');
  json.emit('claude_code.api_request', apiRequestAttrs({ sessionId: 'sess-J', requestId: 'req_json_1', model: 'claude-haiku-4-5', input: 3, output: 4 }));
  await json.shutdown();

  await waitUntil(() => llmEvents().length === 2, 10_000, 'two llm.request events at the server');
  const [p, j] = [llmEvents().find((e) => e.payload.requestId === 'req_proto_1')!, llmEvents().find((e) => e.payload.requestId === 'req_json_1')!];
  assert.is(p.source, 'otlp');
  assert.match(p.id, /^runner-test\.otlp\.[0-9a-f]{32}$/);
  assert.is(p.ts, '2026-11-20T10:00:00.000Z');
  assert.equal(p.payload, {
    key: 'claude:otlp:req_proto_1',
    runtime: 'claude',
    source: 'otlp',
    sessionId: 'sess-P',
    requestId: 'req_proto_1',
    model: 'claude-sonnet-4-5-20250929',
    at: '2026-11-20T10:00:00.000Z',
    inputTokens: 12,
    outputTokens: 340,
    cacheWrite5mTokens: 800,
    cacheWrite1hTokens: 0,
    cacheReadTokens: 5000,
    durationMs: 4100,
    reportedCostUsd: 0.0215,
    speed: 'standard',
    project: 'proj-7',
    slot: 'w1',
    issue: '14',
    run: 'run-abc',
  });
  assert.equal([j.payload.sessionId, j.payload.project, j.payload.inputTokens, j.payload.outputTokens], ['sess-J', null, 3, 4]);
  const sent = JSON.stringify(fake.received);
  for (const [name, value] of Object.entries(SECRETS)) assert.not.ok(sent.includes(value), `${name} must not reach the server`);

  // The SDK retries a batch it thinks failed: the same record again is not spooled again.
  const again = sdkClient(`http://127.0.0.1:${port}`, 'proto', resource);
  again.emit('claude_code.api_request', apiRequestAttrs({ sessionId: 'sess-P', requestId: 'req_proto_1', model: 'claude-sonnet-4-5-20250929', input: 12, output: 340 }));
  again.emit('claude_code.api_request', apiRequestAttrs({ sessionId: 'sess-P', requestId: 'req_proto_2', model: 'claude-sonnet-4-5-20250929', input: 1, output: 1 }));
  await again.shutdown();
  await waitUntil(() => llmEvents().length === 3, 10_000, 'the new request');
  assert.equal(llmEvents().filter((e) => e.payload.requestId === 'req_proto_1').length, 1);
  await waitUntil(() => sb.spoolFiles().length === 0, 5000, 'the spool to empty after the acks');

  const st = await runCli(sb, ['status']);
  assert.match(st.stdout, new RegExp(`^otlp: listening on 127\\.0\\.0\\.1:${port}$`, 'm'));
  await d.kill();
});

test('records that arrive while the server is away wait in the spool (durable before the 200)', async () => {
  sb.writeConfig(pairedConfig(fake.url, { otlp: { http: port } }));
  fake.options.autoAck = false;
  const d = startDaemon(sb);
  await d.waitFor(/OTLP receiver listening/);
  const client = sdkClient(`http://127.0.0.1:${port}`, 'proto');
  client.emit('claude_code.api_request', apiRequestAttrs({ sessionId: 's', requestId: 'req_durable', model: 'claude-opus-4-5', input: 1, output: 2 }));
  await client.shutdown();
  const onDisk = sb.spoolEvents();
  assert.ok(onDisk.some((e) => e.kind === 'llm.request' && e.payload.requestId === 'req_durable'), 'spooled when the exporter got its answer');
  await d.kill();
});

test('otlp.enabled=false → no listener; status says disabled', async () => {
  sb.writeConfig(pairedConfig(fake.url, { otlp: { enabled: false, http: port } }));
  const d = startDaemon(sb);
  await d.waitFor(/OTLP receiver disabled \(otlp\.enabled is false\)/);
  await fake.waitConns(1);
  const refused = await raw(port, { headers: { 'content-type': 'application/json' }, body: '{}' }).then(
    () => null,
    (e: NodeJS.ErrnoException) => e.code,
  );
  assert.is(refused, 'ECONNREFUSED');
  const st = await runCli(sb, ['status']);
  assert.match(st.stdout, /^otlp: disabled \(otlp\.enabled is false\)$/m);
  await d.kill();
});

test('a taken port → the error is logged, the daemon keeps running without the receiver; status says failed with the reason', async () => {
  const holder: Server = createServer((s) => s.destroy());
  await new Promise<void>((ok) => holder.listen(port, '127.0.0.1', ok));
  try {
    sb.writeConfig(pairedConfig(fake.url, { otlp: { http: port } }));
    const d = startDaemon(sb);
    await d.waitFor(new RegExp(`error OTLP receiver not started: 127\\.0\\.0\\.1:${port} is in use by another program; the runner goes on without it`));
    // still a working runner: connected, and its events flow
    const conn = await fake.waitConns(1);
    await conn.next('hello');
    const r = await runCli(sb, ['spool-append', 'test.after_otlp_failure']);
    assert.is(r.status, 0, r.stderr);
    await waitUntil(() => fake.received.some((e) => e.kind === 'test.after_otlp_failure'), 15_000, 'an event sent after the failure');
    assert.is(d.proc.exitCode, null);
    const st = await runCli(sb, ['status']);
    assert.match(st.stdout, new RegExp(`^otlp: failed: 127\\.0\\.0\\.1:${port} is in use by another program$`, 'm'));
    await d.kill();
  } finally {
    await new Promise((ok) => holder.close(ok));
  }
});

test('status without a running daemon says the receiver is not running', async () => {
  sb.writeConfig(pairedConfig(fake.url, { otlp: { http: port } }));
  const st = await runCli(sb, ['status']);
  assert.match(st.stdout, new RegExp(`^otlp: not running \\(the daemon is not running; it listens on 127\\.0\\.0\\.1:${port} when started\\)$`, 'm'));
});

test.run();

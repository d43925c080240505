// The OTLP/HTTP receiver itself (runner/otlp.ts; spec: Runner local OTLP receiver, Limits "OTLP body"):
// the real OpenTelemetry JS SDK exporters (protobuf and JSON) as clients, and raw requests for the
// protocol's edges — string int64s, gzip, bad gzip, a gzip bomb, a body over 4 MiB streamed, wrong
// content types and methods, garbage protobuf, partial success. Only api_request records become LLM
// requests and nothing private is passed on.
import { request } from 'node:http';
import { connect } from 'node:net';
import type { Socket } from 'node:net';
import { gzipSync } from 'node:zlib';
import { fromBinary, fromJson, toBinary } from '@bufbuild/protobuf';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { LlmRequest } from '../../protocol/usage.ts';
import { MAX_BODY_BYTES, OtlpReceiver, RecentIds, isLoopback, spoolEvents } from '../../runner/otlp.ts';
import { StatusSchema } from '../../runner/otlp/gen/google/rpc/status_pb.ts';
import { ExportLogsServiceRequestSchema, ExportLogsServiceResponseSchema } from '../../runner/otlp/gen/logs_service_pb.ts';
import { waitUntil } from '../runner/_harness.ts';
import { SECRETS, apiRequestAttrs, jsonExport, raw, sdkClient, sensitiveEvents } from './_otlp.ts';

let receiver: OtlpReceiver;
let port: number;
let got: LlmRequest[] = [];
/** The number of requests in each onRequests call, in order. */
let stores: number[] = [];
let failStore = false;

async function start(codexExperimental = false): Promise<void> {
  await receiver?.close();
  got = [];
  stores = [];
  receiver = new OtlpReceiver({
    port: 0,
    codexExperimental,
    onRequests: (r) => {
      stores.push(r.length);
      if (failStore) throw new Error('disk full');
      got.push(...r);
    },
  });
  port = await receiver.listen();
}

test.before.each(async () => {
  failStore = false;
  await start();
});
test.after.each(async () => {
  await receiver.close();
});

const base = () => `http://127.0.0.1:${port}`;

for (const kind of ['proto', 'json'] as const) {
  test(`OpenTelemetry SDK with the ${kind} exporter: api_request → one LLM request with exactly the mapped fields; prompts, responses, tool data, e-mail and account ids are dropped`, async () => {
    const client = sdkClient(base(), kind, { 'svc.project': 'proj-1', 'svc.slot': 's2', 'svc.issue': '14', 'svc.run': 'run-9' });
    for (const e of sensitiveEvents('sess-A')) client.emit(e.body, e.attributes);
    client.emit('claude_code.api_request', apiRequestAttrs({ sessionId: 'sess-A', requestId: 'req_011CXJb8F3Bb3xDrKBeYga4T', model: 'claude-opus-4-5-20251101', input: 1, output: 25, cacheRead: 19024, cacheCreation: 187, costUsd: 0.0113, durationMs: 3120 }));
    await client.flush();
    await client.shutdown();
    await waitUntil(() => got.length === 1, 5000, 'the api_request to be mapped');
    assert.equal(got[0], {
      key: 'claude:otlp:req_011CXJb8F3Bb3xDrKBeYga4T',
      runtime: 'claude',
      source: 'otlp',
      sessionId: 'sess-A',
      requestId: 'req_011CXJb8F3Bb3xDrKBeYga4T',
      model: 'claude-opus-4-5-20251101',
      at: '2026-11-20T10:00:00.000Z',
      inputTokens: 1,
      outputTokens: 25,
      cacheWrite5mTokens: 187,
      cacheWrite1hTokens: 0,
      cacheReadTokens: 19024,
      durationMs: 3120,
      reportedCostUsd: 0.0113,
      speed: 'standard',
      project: 'proj-1',
      slot: 's2',
      issue: '14',
      run: 'run-9',
    });
    const text = JSON.stringify(spoolEvents(got, 'r'));
    for (const [name, value] of Object.entries(SECRETS)) assert.not.ok(text.includes(value), `${name} must not be passed on`);
  });
}

test('JSON with int64 values as strings (the reference export), hex trace ids and the short body form; the short event name is accepted', async () => {
  const attrs = apiRequestAttrs({ sessionId: '95e6f011-ec33-4b37-91ad-5d242b40ae3d', requestId: 'req_A', model: 'claude-opus-4-5-20251101', input: 1, output: 25, cacheRead: 19024, cacheCreation: 187, costUsd: 0.0113, durationMs: 3120 });
  const r = await raw(port, { headers: { 'content-type': 'application/json' }, body: jsonExport([{ body: 'api_request', attributes: attrs }]) });
  assert.is(r.status, 200, r.body.toString());
  assert.is(r.headers['content-type'], 'application/json');
  assert.equal(JSON.parse(r.body.toString()), {});
  assert.is(got.length, 1);
  assert.is(got[0]!.at, '2025-11-20T10:00:00.000Z'); // timeUnixNano wins over event.timestamp
  assert.is(got[0]!.cacheReadTokens, 19024);
  assert.is(got[0]!.sessionId, '95e6f011-ec33-4b37-91ad-5d242b40ae3d');
  assert.is(got[0]!.project, null);
});

test('counts as stringValue and cost_usd_micros are read; numbers are exact', async () => {
  const attrs: Record<string, string | number> = { 'event.name': 'api_request', model: 'claude-haiku-4-5', request_id: 'req_S', input_tokens: '120', output_tokens: '7', cache_read_tokens: '0', cache_creation_tokens: '3000', cost_usd_micros: 1234, duration_ms: '812.6' };
  const r = await raw(port, { headers: { 'content-type': 'application/json' }, body: jsonExport([{ attributes: attrs }]) });
  assert.is(r.status, 200);
  assert.is(got.length, 1);
  assert.equal([got[0]!.inputTokens, got[0]!.outputTokens, got[0]!.cacheWrite5mTokens, got[0]!.durationMs, got[0]!.reportedCostUsd, got[0]!.sessionId], [120, 7, 3000, 813, 0.001234, null]);
});

test('gzip bodies (protobuf from the SDK, JSON by hand) are unzipped', async () => {
  const client = sdkClient(base(), 'proto', {}, 'gzip');
  client.emit('claude_code.api_request', apiRequestAttrs({ sessionId: 's', requestId: 'req_gz_proto', model: 'm', input: 5 }));
  await client.shutdown();
  const body = gzipSync(jsonExport([{ body: 'claude_code.api_request', attributes: apiRequestAttrs({ sessionId: 's', requestId: 'req_gz_json', model: 'm', output: 9 }) }]));
  const r = await raw(port, { headers: { 'content-type': 'application/json', 'content-encoding': 'gzip' }, body });
  assert.is(r.status, 200);
  await waitUntil(() => got.length === 2, 5000, 'both requests');
  assert.equal(got.map((g) => g.requestId).sort(), ['req_gz_json', 'req_gz_proto']);
});

test('bad gzip → 400 with a google.rpc.Status in the request encoding', async () => {
  const j = await raw(port, { headers: { 'content-type': 'application/json', 'content-encoding': 'gzip' }, body: 'definitely not gzip' });
  assert.is(j.status, 400);
  const status = JSON.parse(j.body.toString());
  assert.is(status.code, 3);
  assert.match(status.message, /gzip/);
  const truncated = gzipSync(Buffer.from(jsonExport([]))).subarray(0, 12);
  const p = await raw(port, { headers: { 'content-type': 'application/x-protobuf', 'content-encoding': 'gzip' }, body: truncated });
  assert.is(p.status, 400);
  assert.is(p.headers['content-type'], 'application/x-protobuf');
  assert.match(fromBinary(StatusSchema, p.body).message, /gzip/);
});

test('a gzip bomb (256 KiB that unzip to 256 MiB) → 413, without the memory to hold it', async () => {
  const bomb = gzipSync(Buffer.alloc(256 * 1024 * 1024), { level: 9 });
  assert.ok(bomb.length < MAX_BODY_BYTES, `the bomb (${bomb.length} bytes) is under the wire limit`);
  const before = process.memoryUsage().rss;
  let peak = before;
  const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 5);
  const r = await raw(port, { headers: { 'content-type': 'application/x-protobuf', 'content-encoding': 'gzip' }, body: bomb });
  clearInterval(sampler);
  assert.is(r.status, 413);
  assert.match(fromBinary(StatusSchema, r.body).message, /unzipped body is larger than/);
  assert.ok(peak - before < 100 * 1024 * 1024, `memory grew by ${Math.round((peak - before) / 1048576)} MiB`);
  assert.is(got.length, 0);
});

test('a body over 4 MiB → 413 as soon as the limit is crossed, while the sender is still sending', async () => {
  const res = await new Promise<{ status: number; body: string }>((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, method: 'POST', path: '/v1/logs', headers: { 'content-type': 'application/json' }, agent: false }, (res) => {
      let body = '';
      res.on('data', (d) => (body += d));
      res.on('end', () => {
        resolve({ status: res.statusCode!, body });
        req.destroy();
      });
    });
    req.on('error', reject);
    // Chunked, no Content-Length: exactly one byte over the limit, and the request is never ended.
    const chunk = Buffer.alloc(64 * 1024, 0x20);
    for (let sent = 0; sent < MAX_BODY_BYTES; sent += chunk.length) req.write(chunk);
    req.write(' ');
  });
  assert.is(res.status, 413);
  assert.match(JSON.parse(res.body).message, /larger than 4194304 bytes/);
});

test('a declared Content-Length over 4 MiB → 413 before the body is read; exactly 4 MiB is read', async () => {
  const over = await new Promise<number>((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, method: 'POST', path: '/v1/logs', headers: { 'content-type': 'application/x-protobuf', 'content-length': String(MAX_BODY_BYTES + 1) }, agent: false }, (res) => {
      res.resume();
      resolve(res.statusCode!);
      req.destroy();
    });
    req.on('error', reject);
    req.flushHeaders();
  });
  assert.is(over, 413);
  // 4 MiB of JSON whitespace around an empty export: at the limit, so read and decoded.
  const exact = Buffer.alloc(MAX_BODY_BYTES, 0x20);
  Buffer.from('{}').copy(exact, 0);
  const r = await raw(port, { headers: { 'content-type': 'application/json' }, body: exact });
  assert.is(r.status, 200);
});

test('other content types and encodings → 415; other paths → 404; other methods → 405', async () => {
  const t = await raw(port, { headers: { 'content-type': 'text/plain' }, body: 'x' });
  assert.is(t.status, 415);
  assert.match(JSON.parse(t.body.toString()).message, /application\/x-protobuf or application\/json/);
  assert.is((await raw(port, { headers: {}, body: 'x' })).status, 415);
  assert.is((await raw(port, { headers: { 'content-type': 'application/json', 'content-encoding': 'br' }, body: '{}' })).status, 415);
  assert.is((await raw(port, { path: '/v1/other', headers: { 'content-type': 'application/json' }, body: '{}' })).status, 404);
  const get = await raw(port, { method: 'GET', headers: {} });
  assert.is(get.status, 405);
  assert.is(get.headers.allow, 'POST');
  // the content type with parameters is still JSON
  assert.is((await raw(port, { headers: { 'content-type': 'application/json; charset=utf-8' }, body: '{}' })).status, 200);
});

test('garbage protobuf and bad JSON → 400', async () => {
  const p = await raw(port, { headers: { 'content-type': 'application/x-protobuf' }, body: Buffer.from([0x0a, 0xff, 0xff, 0xff, 0xff, 0x0f, 0x01, 0x02]) });
  assert.is(p.status, 400);
  const st = fromBinary(StatusSchema, p.body);
  assert.is(st.code, 3);
  assert.match(st.message, /not a protobuf ExportLogsServiceRequest/);
  assert.is((await raw(port, { headers: { 'content-type': 'application/json' }, body: '{"resourceLogs":' })).status, 400);
  assert.is((await raw(port, { headers: { 'content-type': 'application/json' }, body: '{"resourceLogs":[{"scopeLogs":[{"logRecords":[{"timeUnixNano":"soon"}]}]}]}' })).status, 400);
  assert.is(got.length, 0);
});

test('partial success: records of the api_request kind that cannot be mapped are rejected and counted; the rest is stored', async () => {
  const good = apiRequestAttrs({ sessionId: 's', requestId: 'req_good', model: 'claude-sonnet-4-5', input: 10, output: 2 });
  const noModel = apiRequestAttrs({ sessionId: 's', requestId: 'req_nomodel', input: 1 });
  const badCount = { ...apiRequestAttrs({ sessionId: 's', requestId: 'req_bad', model: 'm' }), input_tokens: 'many' };
  const negative = { ...apiRequestAttrs({ sessionId: 's', requestId: 'req_neg', model: 'm' }), output_tokens: -4 };
  const fraction = { ...apiRequestAttrs({ sessionId: 's', requestId: 'req_frac', model: 'm' }), cache_read_tokens: 1.5 };
  const noId = { ...apiRequestAttrs({ sessionId: 's', requestId: 'x', model: 'm' }), request_id: '' };
  const records = [good, noModel, badCount, negative, fraction, noId].map((attributes) => ({ body: 'claude_code.api_request', attributes }));
  records.push(...sensitiveEvents('s')); // dropped, not rejected
  const req = fromJsonText(jsonExport(records));
  const r = await raw(port, { headers: { 'content-type': 'application/x-protobuf' }, body: Buffer.from(toBinary(ExportLogsServiceRequestSchema, req)) });
  assert.is(r.status, 200);
  const answer = fromBinary(ExportLogsServiceResponseSchema, r.body);
  assert.is(answer.partialSuccess?.rejectedLogRecords, 5n);
  for (const field of ['model: missing', 'input_tokens: not a number', 'output_tokens: must be a non-negative number', 'cache_read_tokens: must be a non-negative integer', 'request_id: missing'])
    assert.ok(answer.partialSuccess!.errorMessage.includes(field), `${field} in ${answer.partialSuccess!.errorMessage}`);
  assert.equal(got.map((g) => g.requestId), ['req_good']);
  // the same in JSON: rejectedLogRecords is an int64, written as a string
  const j = await raw(port, { headers: { 'content-type': 'application/json' }, body: jsonExport([{ attributes: noModel }]) });
  assert.equal(JSON.parse(j.body.toString()).partialSuccess.rejectedLogRecords, '1');
});

test('a spool that cannot store → 503 Unavailable, so the sender retries', async () => {
  failStore = true;
  const r = await raw(port, { headers: { 'content-type': 'application/json' }, body: jsonExport([{ attributes: apiRequestAttrs({ sessionId: 's', requestId: 'r', model: 'm' }) }]) });
  assert.is(r.status, 503);
  assert.is(JSON.parse(r.body.toString()).code, 14);
});

/** Keep-alive connections to the receiver, each able to send a request and read one answer's status. */
async function connections(n: number): Promise<{ send: (body: string) => void; status: () => Promise<number>; socket: Socket }[]> {
  return Promise.all(
    Array.from({ length: n }, () => new Promise<{ send: (body: string) => void; status: () => Promise<number>; socket: Socket }>((resolve, reject) => {
      const socket = connect(port, '127.0.0.1');
      let text = '';
      let waiter: ((s: number) => void) | null = null;
      socket.setEncoding('latin1');
      socket.on('data', (d: string) => {
        text += d;
        // one answer: headers, then content-length bytes
        const end = text.indexOf('\r\n\r\n');
        const length = Number(/content-length: (\d+)/i.exec(text)?.[1] ?? 0);
        if (end < 0 || text.length < end + 4 + length) return;
        const status = Number(text.slice(9, 12));
        text = text.slice(end + 4 + length);
        waiter?.(status);
      });
      socket.once('error', reject);
      socket.once('connect', () =>
        resolve({
          socket,
          send: (body) => socket.write(`POST /v1/logs HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`),
          status: () => new Promise((ok) => (waiter = ok)),
        }),
      );
    })),
  );
}

const oneRequest = (requestId: string) => jsonExport([{ attributes: apiRequestAttrs({ sessionId: 's', requestId, model: 'm', input: 1 }) }]);

test('bodies that arrive together are stored together: one onRequests call (one spool file and fsync) for all, each answered after it', async () => {
  const conns = await connections(8);
  // Every connection's first request, one at a time, so that every socket is accepted and kept alive.
  for (const [i, c] of conns.entries()) {
    const answer = c.status();
    c.send(oneRequest(`req_warm_${i}`));
    assert.is(await answer, 200);
  }
  const before = stores.length;
  // Eight bodies written in one turn of this process: all in the kernel before the receiver reads any.
  const answers = conns.map((c) => c.status());
  conns.forEach((c, i) => c.send(oneRequest(`req_together_${i}`)));
  assert.equal(await Promise.all(answers), Array(8).fill(200));
  assert.equal(stores.slice(before), [8], 'one store for the eight bodies');
  assert.equal(got.slice(-8).map((g) => g.requestId).sort(), conns.map((_, i) => `req_together_${i}`).sort());
  // A store that fails fails every body of its group: all eight are told to retry.
  failStore = true;
  const refused = conns.map((c) => c.status());
  conns.forEach((c, i) => c.send(oneRequest(`req_refused_${i}`)));
  assert.equal(await Promise.all(refused), Array(8).fill(503));
  for (const c of conns) c.socket.destroy();
});

test('/v1/metrics and /v1/traces are accepted and discarded (empty Export*ServiceResponse); their bodies are bounded too', async () => {
  for (const path of ['/v1/metrics', '/v1/traces']) {
    const p = await raw(port, { path, headers: { 'content-type': 'application/x-protobuf' }, body: Buffer.from([0x0a, 0x00]) });
    assert.is(p.status, 200);
    assert.is(p.body.length, 0);
    const j = await raw(port, { path, headers: { 'content-type': 'application/json', 'content-encoding': 'gzip' }, body: gzipSync('{"resourceMetrics":[]}') });
    assert.is(j.status, 200);
    assert.equal(JSON.parse(j.body.toString()), {});
    assert.is((await raw(port, { path, headers: { 'content-type': 'application/json', 'content-encoding': 'gzip' }, body: 'nope' })).status, 400);
  }
  assert.is(got.length, 0);
});

test('Codex response.completed records map only with codexExperimental (input minus cached, reasoning inside output)', async () => {
  const codex = {
    'event.name': 'codex.sse_event',
    'event.kind': 'response.completed',
    'event.timestamp': '2026-11-20T11:00:00.000Z',
    'conversation.id': '019a9776-0a34-7842-8627-112b63d66e90',
    model: 'gpt-5-codex',
    input_token_count: 12840,
    cached_token_count: 9984,
    output_token_count: 412,
    reasoning_token_count: 256,
    tool_token_count: 0,
    'user.email': SECRETS.email,
    'user.account_id': SECRETS.accountUuid,
  };
  const prompt = { 'event.name': 'codex.user_prompt', 'conversation.id': 'c', prompt: SECRETS.prompt };
  const body = jsonExport([{ attributes: codex }, { attributes: prompt }], { 'service.name': 'codex_cli_rs' });
  assert.is((await raw(port, { headers: { 'content-type': 'application/json' }, body })).status, 200);
  assert.is(got.length, 0, 'ignored without otlp.codexExperimental');
  await start(true);
  assert.is((await raw(port, { headers: { 'content-type': 'application/json' }, body })).status, 200);
  assert.is(got.length, 1);
  const { at, ...rest } = got[0]!;
  assert.ok(at);
  assert.equal(rest, {
    key: 'codex:otlp:019a9776-0a34-7842-8627-112b63d66e90:2026-11-20T11:00:00.000Z',
    runtime: 'codex',
    source: 'otlp',
    sessionId: '019a9776-0a34-7842-8627-112b63d66e90',
    model: 'gpt-5-codex',
    inputTokens: 2856,
    outputTokens: 412,
    cacheWrite5mTokens: 0,
    cacheWrite1hTokens: 0,
    cacheReadTokens: 9984,
    reasoningTokens: 256,
    durationMs: null,
    reportedCostUsd: null,
    project: null,
    slot: null,
    issue: null,
    run: null,
  });
  assert.not.ok(JSON.stringify(got).includes(SECRETS.email));
});

test('the same record sent twice gets the same spool event id (the server stores it once)', async () => {
  const body = jsonExport([{ attributes: apiRequestAttrs({ sessionId: 's', requestId: 'req_twice', model: 'm' }) }]);
  await raw(port, { headers: { 'content-type': 'application/json' }, body });
  await raw(port, { headers: { 'content-type': 'application/json' }, body });
  const ids = spoolEvents(got, 'runner-1').map((e) => e.id);
  assert.is(ids.length, 2);
  assert.is(ids[0], ids[1]);
  assert.match(ids[0]!, /^runner-1\.otlp\.[0-9a-f]{32}$/);
  // one store may hold both copies: the daemon spools what is new, once
  const recent = new RecentIds();
  const events = spoolEvents([...got, ...got], 'runner-1');
  assert.is(recent.unseen(events).length, 1);
  recent.add(ids[0]!);
  assert.is(recent.unseen(events).length, 0);
});

test('only loopback peers are served', () => {
  for (const a of ['127.0.0.1', '127.8.9.10', '::1', '::ffff:127.0.0.1']) assert.ok(isLoopback(a), a);
  for (const a of ['10.0.0.1', '192.168.1.2', '::ffff:10.1.2.3', 'fe80::1', '::', '0.0.0.0', '', undefined]) assert.not.ok(isLoopback(a), String(a));
});

/** A JSON export turned into the protobuf message (to send the same records as protobuf). */
function fromJsonText(text: string) {
  const json = JSON.parse(text);
  for (const rl of json.resourceLogs) for (const sl of rl.scopeLogs) for (const r of sl.logRecords) {
    delete r.traceId;
    delete r.spanId;
  }
  return fromJson(ExportLogsServiceRequestSchema, json);
}

test.run();

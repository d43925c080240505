// `otlp.grpc` is reserved (spec: Runner configuration file: "null — Reserved; gRPC is not served"):
// runner.json with any other value is refused by the real bundle — exit 1, the field named, its value
// never shown, nothing started — and null or an absent key is accepted.
import { existsSync } from 'node:fs';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { configSchema } from '../../runner/config.ts';
import { runCli, sandbox } from './_harness.ts';
import type { Sandbox } from './_harness.ts';

let sb: Sandbox;
test.before.each(() => {
  sb = sandbox();
});
test.after.each(() => sb.cleanup());

const paired = { server: 'http://127.0.0.1:9', runnerId: 'r1', token: 'svc_rt_0123456789abcdef' };
const VALUES: unknown[] = [4317, 0, true, false, 'grpc-value-4317', '127.0.0.1:4317', {}, { port: 4317 }, [], [4317]];

test('any otlp.grpc other than null → `svc-runner run` exits 1 naming otlp.grpc, never the value, and starts nothing', async () => {
  for (const grpc of VALUES) {
    sb.writeConfig({ ...paired, otlp: { enabled: true, http: 4318, grpc } });
    const r = await runCli(sb, ['run']);
    const what = JSON.stringify(grpc);
    assert.is(r.status, 1, `grpc ${what}: ${r.stderr}`);
    assert.match(r.stderr, /is invalid and was not used:\n {2}- otlp\.grpc: must be null\n$/, `grpc ${what}`);
    assert.not.match(r.stderr, /grpc-value|4317/, 'the value is not echoed');
    assert.not.ok(existsSync(sb.lockPath), 'the daemon did not start');
  }
});

test('otlp.grpc null, or absent, is accepted', () => {
  assert.is(configSchema.parse({ otlp: { grpc: null } }).otlp?.grpc, null);
  assert.is(configSchema.parse({ otlp: {} }).otlp?.grpc, null);
  for (const grpc of VALUES) {
    const r = configSchema.safeParse({ otlp: { grpc } });
    assert.not.ok(r.success, JSON.stringify(grpc));
    assert.equal(r.error!.issues.map((i) => i.path.join('.')), ['otlp.grpc']);
  }
});

test.run();

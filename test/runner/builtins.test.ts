// The runner bundle loads a Node built-in where it is first used, not where it is imported
// (esbuild.config.mjs, `lazyBuiltins`): an idle daemon on a ws:// server must not hold tls, https, zlib or
// perf_hooks (docs/performance.md, "Built-ins loaded where they are used"), and a built-in read through
// every kind of import still works once loaded.
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { join } from 'node:path';
import tls from 'node:tls';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { startFakeServer } from './_fake-server.ts';
import type { FakeServer } from './_fake-server.ts';
import { killDaemons, pairedConfig, runCli, sandbox, startDaemon, waitUntil } from './_harness.ts';
import type { Sandbox } from './_harness.ts';

let fake: FakeServer;
let sb: Sandbox;

test.before.each(async () => {
  fake = await startFakeServer();
  sb = sandbox();
});
test.after.each(async () => {
  await killDaemons();
  await fake.stop();
  sb.cleanup();
});

/** A `--require` hook that writes the process's loaded built-ins to `out` on SIGUSR2. */
function loadListHook(out: string): string {
  const hook = join(sb.dir, 'load-list.cjs');
  writeFileSync(hook, `process.on('SIGUSR2', () => require('fs').writeFileSync(${JSON.stringify(out)}, JSON.stringify(process.moduleLoadList.filter((m) => m.startsWith('NativeModule ')).map((m) => m.slice(13)))));`);
  return hook;
}

test('a connected, idle daemon has not loaded tls, https, zlib or perf_hooks; it has loaded what it uses', async () => {
  sb.writeConfig(pairedConfig(fake.url, { profiles: [] }));
  const out = join(sb.dir, 'loaded.json');
  const d = startDaemon(sb, { NODE_OPTIONS: `--require ${loadListHook(out)}` });
  await fake.waitConns(1);
  await d.waitFor(/connected to /);
  d.proc.kill('SIGUSR2');
  await waitUntil(() => existsSync(out), 10_000, 'the load list');
  const loaded: string[] = JSON.parse(readFileSync(out, 'utf8'));
  for (const used of ['http', 'net', 'crypto']) assert.ok(loaded.includes(used), `${used} is loaded (the WebSocket client uses it): ${loaded.join(' ')}`);
  for (const unused of ['tls', 'https', '_tls_wrap', 'zlib', 'perf_hooks']) assert.not.ok(loaded.includes(unused), `${unused} is not loaded`);
});

test('over wss:// the daemon loads tls and https when it dials, and connects through them', async () => {
  // A TLS front (a self-signed certificate the daemon trusts through NODE_EXTRA_CA_CERTS) piping to the fake server.
  execFileSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '1', '-subj', '/CN=localhost', '-addext', 'subjectAltName=DNS:localhost', '-keyout', join(sb.dir, 'key.pem'), '-out', join(sb.dir, 'cert.pem')], { stdio: 'ignore' });
  const fakePort = Number(new URL(fake.url).port);
  const front = tls.createServer({ key: readFileSync(join(sb.dir, 'key.pem')), cert: readFileSync(join(sb.dir, 'cert.pem')) }, (socket) => {
    const upstream = net.connect(fakePort, '127.0.0.1');
    socket.pipe(upstream).pipe(socket);
    socket.on('error', () => upstream.destroy());
    upstream.on('error', () => socket.destroy());
  });
  await new Promise<void>((r) => front.listen(0, '127.0.0.1', r));
  try {
    const port = (front.address() as net.AddressInfo).port;
    sb.writeConfig(pairedConfig(`https://localhost:${port}`, { profiles: [] }));
    const out = join(sb.dir, 'loaded.json');
    const d = startDaemon(sb, { NODE_OPTIONS: `--require ${loadListHook(out)}`, NODE_EXTRA_CA_CERTS: join(sb.dir, 'cert.pem') });
    const conn = await fake.waitConns(1);
    assert.match(String(conn.headers.authorization), /^Bearer /);
    await d.waitFor(/connected to /);
    d.proc.kill('SIGUSR2');
    await waitUntil(() => existsSync(out), 10_000, 'the load list');
    const loaded: string[] = JSON.parse(readFileSync(out, 'utf8'));
    for (const used of ['tls', 'https']) assert.ok(loaded.includes(used), `${used} is loaded once the daemon dials wss://`);
  } finally {
    await killDaemons();
    await new Promise((r) => front.close(r));
  }
});

test('a command reads built-ins through namespace, named and default imports alike once they are loaded', async () => {
  // `usage` reads the transcripts' files (node:fs, node:path), hashes (node:crypto) and prints; `doctor`
  // spawns (node:child_process) and listens (node:net): each built-in is loaded by its first read.
  const usage = await runCli(sb, ['usage', 'daily', '--json']);
  assert.is(usage.status, 0, usage.stderr);
  assert.equal(JSON.parse(usage.stdout), { days: [] });
  sb.writeConfig(pairedConfig(fake.url, { profiles: [] }));
  const doctor = await runCli(sb, ['doctor']);
  assert.match(doctor.stdout, /tmux/);
  assert.match(doctor.stdout, /^(ok|warn|fail) +otlp: /m);
  assert.not.match(doctor.stdout + doctor.stderr, /TypeError|is not a function|Cannot read properties/);
});

test.run();

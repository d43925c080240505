// Process lifecycle: graceful SIGTERM, and a database that is down when the server starts.
import { request as httpRequest } from 'node:http';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { ADMIN_URL, TEST_DB, freshPostgres, onlyOn } from '../helpers/db.ts';
import { startServer } from '../helpers/server.ts';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
async function waitFor(check: () => boolean, ms = 10_000): Promise<void> {
  for (const until = Date.now() + ms; !check(); await sleep(20)) if (Date.now() > until) throw new Error('timed out');
}

test('SIGTERM: drains (/health 503 and connection: close while requests are under way), the in-flight request finishes, then new connections are refused, exit 0', async () => {
  const s = await startServer({ admin: true, env: { LOG_LEVEL: 'debug' } });
  try {
    // Start a PUT whose body arrives slowly, so it is in flight when SIGTERM lands.
    const response = new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = httpRequest(`${s.url}/api/prices/slow-model`, { method: 'PUT', headers: { 'content-type': 'application/json', authorization: `Bearer ${s.admin.token}` } }, (res) => {
        let body = '';
        res.on('data', (d) => (body += d));
        res.on('end', () => resolve({ status: res.statusCode!, body }));
      });
      req.on('error', reject);
      req.write('{"inputUsdPerMTok": 1,');
      setTimeout(() => req.end('"outputUsdPerMTok": 2}'), 1000);
    });
    for (let i = 0; i < 100 && !/DEBUG request method=PUT path=\/api\/prices\/slow-model/.test(s.output()); i++) await sleep(20);
    response.catch(() => {}); // awaited below; never an unhandled rejection if an assertion fails first
    s.proc.kill('SIGTERM');
    await waitFor(() => /shutting down signal=SIGTERM/.test(s.output()));
    // Draining: a balancer's health check is told to take this replica out, and the answer closes its connection.
    const health = await fetch(`${s.url}/health`);
    assert.is(health.status, 503);
    assert.is(health.headers.get('connection'), 'close');
    assert.is((await health.json()).status, 'stopping');
    const done = await response;
    assert.is(done.status, 200);
    assert.is(JSON.parse(done.body).model, 'slow-model');
    assert.is(await s.exited, 0);
    const refused = await fetch(`${s.url}/health`).then(
      () => false,
      () => true,
    );
    assert.ok(refused, 'no new connections once stopped');
    assert.match(s.output(), /shutting down signal=SIGTERM inFlight=1/);
    assert.match(s.output(), /stopped/);
  } finally {
    await s.cleanup();
  }
});

test('SIGTERM: the whole shutdown (drain, in-flight requests, jobs) ends within SHUTDOWN_TIMEOUT_SECONDS, even with a request that never finishes', async () => {
  // A docker stop sends SIGKILL after its own timeout (10 s; compose: stop_grace_period): the drain and the
  // request grace used to add up (up to 5 s + SHUTDOWN_TIMEOUT_SECONDS, then jobs the same again).
  const s = await startServer({ admin: true, env: { LOG_LEVEL: 'debug', SHUTDOWN_TIMEOUT_SECONDS: '5' } });
  try {
    // A PUT whose body never ends: in flight until the server gives up on it.
    const req = httpRequest(`${s.url}/api/prices/never-ends`, { method: 'PUT', headers: { 'content-type': 'application/json', authorization: `Bearer ${s.admin.token}` } });
    const ended = new Promise<string>((resolve) => {
      req.on('response', (res) => resolve(`answered ${res.statusCode}`));
      req.on('error', (err) => resolve(`closed: ${err.message}`));
    });
    req.write('{"inputUsdPerMTok": 1,');
    await waitFor(() => /DEBUG request method=PUT path=\/api\/prices\/never-ends/.test(s.output()));
    const t0 = performance.now();
    s.proc.kill('SIGTERM');
    assert.is(await s.exited, 0);
    const seconds = (performance.now() - t0) / 1000;
    // 5 s and what closing the database takes; before, 5 s of drain came first: 10 s and more.
    assert.ok(seconds < 8, `stopped after ${seconds.toFixed(1)} s`);
    assert.ok(seconds > 4, `the request had its time (${seconds.toFixed(1)} s)`);
    assert.match(await ended, /^closed/);
    assert.match(s.output(), /shutting down signal=SIGTERM inFlight=1/);
  } finally {
    await s.cleanup();
  }
});

onlyOn('postgres', test, 2, () => {
  /** A port with nothing behind it yet; later a TCP relay to the real PostgreSQL appears on it. */
  async function freePort(): Promise<number> {
    const srv = net.createServer().listen(0, '127.0.0.1');
    await new Promise((r) => srv.once('listening', r));
    const { port } = srv.address() as AddressInfo;
    await new Promise((r) => srv.close(r));
    return port;
  }

  function relay(port: number, target: URL) {
    const srv = net.createServer((client) => {
      const upstream = net.connect(Number(target.port || 5432), target.hostname);
      client.pipe(upstream).pipe(client);
      client.on('error', () => upstream.destroy());
      upstream.on('error', () => client.destroy());
    });
    return new Promise<net.Server>((r) => srv.listen(port, '127.0.0.1', () => r(srv)));
  }

  test('database down at start: retries with a clear log (no password), then serves when it appears', async () => {
    const pg = await freshPostgres();
    const port = await freePort();
    const url = new URL(pg.url);
    url.password = 'VerySecretPw42';
    url.port = String(port);
    let relayServer: net.Server | undefined;
    const s = await startServer({ dbEnv: { DATABASE_URL: url.toString(), DATABASE_CONNECT_TIMEOUT_SECONDS: '60' }, waitFor: /database unreachable, retrying .*attempt=2/ });
    try {
      assert.match(s.output(), /WARN database unreachable, retrying driver=postgres target="postgres:\/\/postgres:\*\*\*@127\.0\.0\.1:\d+\/svc_t_\w+" attempt=1 retryInSeconds=1/);
      relayServer = await relay(port, new URL(ADMIN_URL));
      for (let i = 0; i < 100 && !/listening/.test(s.output()); i++) await sleep(100);
      assert.match(s.output(), /database connected/);
      const port2 = /listening .*port=(\d+)/.exec(s.output())![1];
      assert.is((await fetch(`http://127.0.0.1:${port2}/health`)).status, 200);
      assert.not.ok(s.output().includes('VerySecretPw42'), 'password never logged');
      assert.is(await s.stop(), 0);
    } finally {
      await s.cleanup();
      relayServer?.close();
      await pg.drop();
    }
  });

  test('database never comes up: a final message and exit 1 after DATABASE_CONNECT_TIMEOUT_SECONDS', async () => {
    const port = await freePort();
    const s = await startServer({
      dbEnv: { DATABASE_URL: `postgres://postgres:pw@127.0.0.1:${port}/nowhere`, DATABASE_CONNECT_TIMEOUT_SECONDS: '3' },
      expectExit: true,
    });
    assert.is(await s.exited, 1);
    assert.match(s.output(), /database unreachable, retrying/);
    assert.match(s.output(), /start failed error="cannot open the database \(postgres postgres:\/\/postgres:\*\*\*@127\.0\.0\.1:\d+\/nowhere\) after \d attempt/);
    assert.not.match(s.output(), /listening/);
  });
});

test.run();

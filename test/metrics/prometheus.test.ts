// A real Prometheus (Debian's package) scrapes the real server's GET /metrics: started on loopback with a
// temporary data directory, a 1 s scrape interval, the bearer token and the example alert rules
// (docs/prometheus/alerts.yml). Target `up == 1` through its HTTP API, then signed trigger calls, then
// the trigger counter read back through its query API. `promtool check rules` checks the alert rules.
// Prometheus is killed at the end, also when a test fails (and when this process exits).
// needs: prometheus promtool
import { spawn, spawnSync } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { createTrigger, post, setup, waitFor } from '../triggers/_harness.ts';
import type { Made, Setup } from '../triggers/_harness.ts';
import { METRICS_TOKEN } from './_scrape.ts';

const RULES = resolve(import.meta.dirname, '../../docs/prometheus/alerts.yml');
let s: Setup;
let prom: ChildProcess | null = null;
let promOut = '';
let promUrl = '';
let dir = '';
let trigger: Made;

const freePort = () =>
  new Promise<number>((ok, fail) => {
    const srv = net.createServer().listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as net.AddressInfo;
      srv.close(() => ok(port));
    });
    srv.once('error', fail);
  });

const killProm = () => {
  if (prom && prom.exitCode === null && prom.signalCode === null) prom.kill('SIGKILL');
};
process.once('exit', killProm);

/** A PromQL instant query through Prometheus's HTTP API: the result vector. */
async function query(expr: string): Promise<{ metric: Record<string, string>; value: [number, string] }[]> {
  const res = await fetch(`${promUrl}/api/v1/query?query=${encodeURIComponent(expr)}`);
  const body = (await res.json()) as { status: string; data: { result: { metric: Record<string, string>; value: [number, string] }[] } };
  if (body.status !== 'success') throw new Error(`query ${expr}: ${JSON.stringify(body)}`);
  return body.data.result;
}

const valueOf = async (expr: string) => {
  const r = await query(expr);
  return r.length ? Number(r[0].value[1]) : undefined;
};

test.before(async () => {
  s = await setup({ env: { METRICS_TOKEN } });
  trigger = await createTrigger(s.server, s.projectId);
  dir = mkdtempSync(join(tmpdir(), 'svc-prom-'));
  const port = await freePort();
  promUrl = `http://127.0.0.1:${port}`;
  const config = join(dir, 'prometheus.yml');
  writeFileSync(
    config,
    [
      'global:',
      '  scrape_interval: 1s',
      '  scrape_timeout: 1s',
      '  evaluation_interval: 1s',
      'rule_files:',
      `  - ${JSON.stringify(RULES)}`,
      'scrape_configs:',
      '  - job_name: svc',
      '    authorization:',
      '      type: Bearer',
      `      credentials: ${JSON.stringify(METRICS_TOKEN)}`,
      '    static_configs:',
      `      - targets: [${JSON.stringify(new URL(s.server.url).host)}]`,
      '',
    ].join('\n'),
  );
  prom = spawn('prometheus', [`--config.file=${config}`, `--storage.tsdb.path=${join(dir, 'data')}`, `--web.listen-address=127.0.0.1:${port}`, '--log.level=warn'], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  prom.stdout!.on('data', (c: Buffer) => (promOut += c.toString()));
  prom.stderr!.on('data', (c: Buffer) => (promOut += c.toString()));
});

test.after(async () => {
  killProm();
  if (prom && prom.exitCode === null && prom.signalCode === null) await new Promise((r) => prom!.once('exit', r));
  await s?.server.cleanup();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

test('promtool check rules accepts the example alert rules', () => {
  const r = spawnSync('promtool', ['check', 'rules', RULES], { encoding: 'utf8' });
  assert.is(r.status, 0, `${r.stdout}${r.stderr}`);
  assert.match(r.stdout, 'SUCCESS: 3 rules found');
});

test('Prometheus scrapes the server with the bearer token: target up == 1, the alert rules loaded', async () => {
  try {
    await waitFor('the svc target up', async () => (await valueOf('up{job="svc"}').catch(() => undefined)) === 1, 60_000);
  } catch (err) {
    console.error(promOut);
    throw err;
  }
  const rules = (await (await fetch(`${promUrl}/api/v1/rules`)).json()) as { data: { groups: { rules: { name: string; health: string }[] }[] } };
  const loaded = rules.data.groups.flatMap((g) => g.rules);
  assert.equal(loaded.map((r) => r.name).sort(), ['SvcAuditChainBroken', 'SvcRunnerOffline', 'SvcWebhookCircuitOpen']);
  // Evaluated against the scraped series: healthy, and none fires on a fresh instance.
  await waitFor('the rules evaluated', async () => {
    const again = (await (await fetch(`${promUrl}/api/v1/rules`)).json()) as typeof rules;
    return again.data.groups.flatMap((g) => g.rules).every((r) => r.health === 'ok');
  }, 30_000);
  assert.equal(await query('ALERTS{alertstate="firing"}'), []);
  assert.is(await valueOf('svc_audit_chain_ok'), 1);
});

test('signed trigger calls: Prometheus\'s query API returns the trigger counter by outcome and reason', async () => {
  for (let i = 0; i < 3; i++) assert.is((await post(trigger.url, trigger.secret, { ref: `r${i}` }, { delivery: `d-${randomUUID()}` })).status, 202);
  const replayed = `d-${randomUUID()}`;
  assert.is((await post(trigger.url, trigger.secret, { ref: 'x' }, { delivery: replayed })).status, 202);
  assert.is((await post(trigger.url, trigger.secret, { ref: 'x' }, { delivery: replayed })).status, 409);
  assert.is((await post(trigger.url, 'a-wrong-secret', { ref: 'x' })).status, 401);
  const accepted = 'svc_trigger_calls_total{job="svc",outcome="accepted",reason="accepted"}';
  // A scrape may fall between two calls: wait for one that saw all six.
  await waitFor('the six calls in Prometheus', async () => (await valueOf('sum(svc_trigger_calls_total{job="svc"})')) === 6, 30_000);
  assert.is(await valueOf(accepted), 4);
  assert.is(await valueOf('svc_trigger_calls_total{outcome="refused",reason="replayed"}'), 1);
  assert.is(await valueOf('svc_trigger_calls_total{outcome="refused",reason="signature"}'), 1);
  // The HTTP counter under the hook's route template, with the answers' status classes.
  assert.ok(((await valueOf('sum(svc_http_requests_total{route="/hooks/:publicId"})')) ?? 0) >= 6);
});

test.run();

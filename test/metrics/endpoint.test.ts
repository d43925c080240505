// GET /metrics on the real server (functions/metrics/): off unless configured (404, as if there were no
// such route), the bearer token (401 without it), METRICS_ALLOW by the TCP peer (X-Forwarded-For does not
// count), counters that move with real requests under route templates (never raw ids), LLM token and cost
// counters read from the database (the same after a restart), and an exposition promtool accepts.
import { randomUUID } from 'node:crypto';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { serverDbEnv } from '../helpers/db.ts';
import { startServer } from '../helpers/server.ts';
import type { RunningServer } from '../helpers/server.ts';
import { send, tok, transcriptReq, uid } from '../helpers/usage-events.ts';
import { connect } from '../helpers/wsclient.ts';
import { createTrigger, post, setup } from '../triggers/_harness.ts';
import type { Setup } from '../triggers/_harness.ts';
import { METRICS_TOKEN, promtoolCheck, sample, scrape } from './_scrape.ts';

let a: Setup;
let off: RunningServer;
let allowed: RunningServer;
let proxied: RunningServer;
let dbEnv: { env: Record<string, string>; cleanup: () => Promise<void> };
const servers: RunningServer[] = [];

test.before(async () => {
  dbEnv = await serverDbEnv();
  [a, off, allowed, proxied] = await Promise.all([
    setup({ dbEnv: dbEnv.env, env: { METRICS_TOKEN } }),
    startServer(),
    startServer({ env: { METRICS_ALLOW: '127.0.0.0/8, ::1' } }),
    startServer({ env: { METRICS_ALLOW: '10.0.0.0/8', TRUST_PROXY: 'true' } }),
  ]);
  servers.push(a.server, off, allowed, proxied);
});

test.after(async () => {
  await Promise.all(servers.map((s) => s.cleanup()));
  await dbEnv.cleanup();
});

test('neither METRICS_TOKEN nor METRICS_ALLOW: GET /metrics is 404, the same answer as a path with no route', async () => {
  const m = await scrape(off.url);
  assert.is(m.status, 404);
  assert.is(JSON.parse(m.text).error.code, 'not_found');
  assert.is((await scrape(off.url, null)).status, 404);
});

test('METRICS_TOKEN: 401 without the token or with a wrong one; 200 in the text format with it', async () => {
  for (const token of [null, 'wrong-token-wrong-token-wrong', `${METRICS_TOKEN}x`]) {
    const m = await scrape(a.server.url, token);
    assert.is(m.status, 401, String(token));
    assert.match(m.headers.get('www-authenticate') ?? '', /^Bearer/);
    assert.not.match(m.text, 'svc_http_requests_total');
  }
  const m = await scrape(a.server.url);
  assert.is(m.status, 200);
  assert.match(m.headers.get('content-type') ?? '', /^text\/plain; version=0\.0\.4/);
  assert.match(m.text, '# TYPE svc_http_requests_total counter');
  assert.match(m.text, 'process_cpu_seconds_total'); // Node's default metrics
});

test('METRICS_ALLOW: a peer in the list reads without a token; one outside gets 404, whatever X-Forwarded-For says', async () => {
  assert.is((await scrape(allowed.url, null)).status, 200);
  const spoofed = await scrape(proxied.url, null, { 'x-forwarded-for': '10.1.2.3' });
  assert.is(spoofed.status, 404);
});

test('HTTP counters move with real requests, under the route template: no raw id or path in any label', async () => {
  const before = await scrape(a.server.url);
  const labels = { method: 'GET', route: '/api/projects/:projectId', status: '2xx' };
  const missing = { method: 'GET', route: '/api/projects/:projectId', status: '4xx' };
  const b2 = sample(before.text, 'svc_http_requests_total', labels) ?? 0;
  const b4 = sample(before.text, 'svc_http_requests_total', missing) ?? 0;
  const stray = `/no-such-place-${uid()}`;
  const ghost = `p_${uid()}`;
  for (let i = 0; i < 3; i++) assert.is((await a.server.api(`/api/projects/${a.projectId}`)).status, 200);
  const ghostStatus = (await a.server.api(`/api/projects/${ghost}`)).status;
  assert.ok(ghostStatus >= 400 && ghostStatus < 500, String(ghostStatus));
  assert.is((await a.server.api(`/api${stray}`)).status, 404);
  const after = await scrape(a.server.url);
  assert.is(sample(after.text, 'svc_http_requests_total', labels), b2 + 3);
  assert.is(sample(after.text, 'svc_http_requests_total', missing), b4 + 1);
  assert.ok((sample(after.text, 'svc_http_requests_total', { method: 'GET', route: 'none', status: '4xx' }) ?? 0) >= 1);
  assert.ok((sample(after.text, 'svc_http_request_duration_seconds_count', { method: 'GET', route: '/api/projects/:projectId' }) ?? 0) >= 4);
  for (const raw of [a.projectId, ghost, stray]) assert.not.match(after.text, raw);
});

test('trigger calls counted by outcome and reason; the trigger\'s public id never appears', async () => {
  const t = await createTrigger(a.server, a.projectId);
  const before = await scrape(a.server.url);
  const accepted = { outcome: 'accepted', reason: 'accepted' };
  const signature = { outcome: 'refused', reason: 'signature' };
  const delivery = `d-${randomUUID()}`;
  assert.is((await post(t.url, t.secret, { ref: 'main' }, { delivery })).status, 202);
  assert.is((await post(t.url, t.secret, { ref: 'main' }, { delivery })).status, 409);
  assert.is((await post(t.url, 'not-the-secret', { ref: 'main' })).status, 401);
  const after = await scrape(a.server.url);
  const d = (labels: Record<string, string>) => (sample(after.text, 'svc_trigger_calls_total', labels) ?? 0) - (sample(before.text, 'svc_trigger_calls_total', labels) ?? 0);
  assert.is(d(accepted), 1);
  assert.is(d({ outcome: 'refused', reason: 'replayed' }), 1);
  assert.is(d(signature), 1);
  assert.ok((sample(after.text, 'svc_http_requests_total', { method: 'POST', route: '/hooks/:publicId', status: '4xx' }) ?? 0) >= 2);
  assert.not.match(after.text, t.publicId);
});

test('runner events: spool acks and ingest lag; LLM tokens and cost from the database, the same after a restart', async () => {
  const runner = connect(a.server.url, a.runner.token);
  await runner.next('welcome');
  const session = `s-${uid()}`;
  await send(runner, [
    transcriptReq('claude', session, 'claude-sonnet-4-5', `req_${uid()}`, tok(1000, 500), { project: a.projectId }),
    transcriptReq('claude', session, 'a-model-nobody-prices', `req_${uid()}`, tok(7, 3), { project: a.projectId }),
  ]);
  runner.ws.close();
  const first = await scrape(a.server.url);
  assert.ok((sample(first.text, 'svc_runner_events_acked_total') ?? 0) >= 2);
  assert.ok((sample(first.text, 'svc_runner_event_ingest_lag_seconds_count') ?? 0) >= 2);
  const sonnet = { project: a.projectId, model: 'claude-sonnet-4-5' };
  assert.is(sample(first.text, 'svc_llm_input_tokens_total', sonnet), 1000);
  assert.is(sample(first.text, 'svc_llm_output_tokens_total', sonnet), 500);
  assert.ok((sample(first.text, 'svc_llm_cost_usd_total', sonnet) ?? 0) > 0);
  assert.is(sample(first.text, 'svc_llm_input_tokens_total', { project: a.projectId, model: 'other' }), 7); // unpriced model: bounded label
  assert.not.match(first.text, 'a-model-nobody-prices');
  // Restart on the same database: the counters are sums of stored rows, not counts since the start.
  await a.server.stop();
  const again = await startServer({ dbEnv: dbEnv.env, env: { METRICS_TOKEN, APP_ENCRYPTION_KEY: Buffer.alloc(32, 9).toString('base64') } });
  servers.push(again);
  const second = await scrape(again.url);
  assert.is(sample(second.text, 'svc_llm_input_tokens_total', sonnet), 1000);
  assert.is(sample(second.text, 'svc_llm_cost_usd_total', sonnet), sample(first.text, 'svc_llm_cost_usd_total', sonnet));
  assert.is(sample(second.text, 'svc_runners_registered'), 1);
  assert.is(sample(second.text, 'svc_runners_connected'), 0);
  assert.is(sample(second.text, 'svc_audit_chain_ok'), 1);
  const check = promtoolCheck(second.text);
  assert.is(check.status, 0, check.output);
});

test('promtool check metrics accepts the exposition after traffic of every kind', async () => {
  const m = await scrape(allowed.url, null);
  const check = promtoolCheck(m.text);
  assert.is(check.status, 0, check.output);
});

test.run();

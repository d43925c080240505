// Who may read GET /metrics (functions/metrics/access.ts), the network lists of METRICS_ALLOW
// (functions/lib/networks.ts) and the settings' validation, as pure rules with fixed vectors.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { ConfigError, loadConfig } from '../../functions/lib/config.ts';
import { inNetworks, networkEntries, parseNetwork } from '../../functions/lib/networks.ts';
import { metricsAccess } from '../../functions/metrics/access.ts';
import { countTriggerCall, countWebhookAttempt, observeRequest, registry, statusClass } from '../../functions/metrics/registry.ts';

const TOKEN = 'k7f2-metrics-token-0123456789';
const cfg = (over: { METRICS_TOKEN?: string; METRICS_ALLOW?: string }) => loadConfig({ ...over });

test('neither setting: off (404) for everyone, token or not', () => {
  assert.is(metricsAccess(cfg({}), '127.0.0.1', `Bearer ${TOKEN}`), 'off');
});

test('METRICS_TOKEN: the exact bearer token passes; none, a wrong one, a prefix, another scheme → unauthorized', () => {
  const c = cfg({ METRICS_TOKEN: TOKEN });
  assert.is(metricsAccess(c, '203.0.113.9', `Bearer ${TOKEN}`), 'allowed');
  assert.is(metricsAccess(c, '203.0.113.9', `bearer ${TOKEN}`), 'allowed');
  for (const h of [null, '', 'Bearer', `Bearer ${TOKEN}x`, `Bearer ${TOKEN.slice(0, -1)}`, `Basic ${TOKEN}`, TOKEN, `Bearer ${TOKEN} extra`]) {
    assert.is(metricsAccess(c, '203.0.113.9', h), 'unauthorized', String(h));
  }
});

test('METRICS_ALLOW: a peer inside a listed network passes without a token; outside → hidden (404)', () => {
  const c = cfg({ METRICS_ALLOW: '10.0.0.0/8, 192.168.1.7 fd00::/8' });
  assert.is(metricsAccess(c, '10.20.30.40', null), 'allowed');
  assert.is(metricsAccess(c, '192.168.1.7', null), 'allowed');
  assert.is(metricsAccess(c, '::ffff:10.1.1.1', null), 'allowed'); // a listener on :: sees IPv4 peers mapped
  assert.is(metricsAccess(c, 'fd12::1', null), 'allowed');
  for (const peer of ['192.168.1.8', '11.0.0.1', '127.0.0.1', '::1', '', 'not-an-ip']) assert.is(metricsAccess(c, peer, null), 'hidden', peer);
});

test('both set: the network first (404 outside), then the token (401 without it)', () => {
  const c = cfg({ METRICS_ALLOW: '127.0.0.0/8', METRICS_TOKEN: TOKEN });
  assert.is(metricsAccess(c, '10.0.0.1', `Bearer ${TOKEN}`), 'hidden');
  assert.is(metricsAccess(c, '127.0.0.1', null), 'unauthorized');
  assert.is(metricsAccess(c, '127.0.0.1', `Bearer ${TOKEN}`), 'allowed');
});

test('network entries: CIDRs and bare addresses; anything else is refused', () => {
  assert.equal(networkEntries(' 10.0.0.0/8,,127.0.0.1\n::1 '), ['10.0.0.0/8', '127.0.0.1', '::1']);
  assert.is(parseNetwork('10.0.0.0/8')?.[1], 8);
  assert.is(parseNetwork('127.0.0.1')?.[1], 32);
  assert.is(parseNetwork('[::1]')?.[1], 128);
  for (const bad of ['10.0.0.0/33', '10/8', '0x7f000001', 'example.com', '10.0.0.0/8/1', 'fe80::1%eth0', '::/129', '1.2.3']) assert.is(parseNetwork(bad), null, bad);
  assert.ok(inNetworks('10.255.0.1', [parseNetwork('10.0.0.0/8')!]));
  assert.not.ok(inNetworks('10.0.0.1', [parseNetwork('::/0')!])); // an IPv4 peer is not in an IPv6 network
});

test('config: a short token or a bad network list stops the start, naming the variable, not the value', () => {
  for (const [env, name] of [
    [{ METRICS_TOKEN: 'short-secret' }, 'METRICS_TOKEN'],
    [{ METRICS_ALLOW: '10.0.0.0/8, intranet.example' }, 'METRICS_ALLOW'],
    [{ METRICS_ALLOW: ' , ' }, 'METRICS_ALLOW'],
  ] as const) {
    try {
      loadConfig({ ...env });
      assert.unreachable(name);
    } catch (err) {
      assert.instance(err, ConfigError);
      const text = (err as ConfigError).problems.join('\n');
      assert.match(text, name);
      assert.not.match(text, 'short-secret');
    }
  }
});

test('label values stay bounded: status classes, closed reasons, unknown methods and errors folded into "other"', async () => {
  assert.equal([200, 204, 301, 404, 503, 99, 600].map(statusClass), ['2xx', '2xx', '3xx', '4xx', '5xx', 'other', 'other']);
  observeRequest('PROPFIND', '/api/projects/:projectId', 207, 0.001);
  countTriggerCall(418);
  countTriggerCall(599);
  countWebhookAttempt(false, 'some new error nobody listed', null, 0.2);
  const text = await registry.metrics();
  assert.match(text, 'svc_http_requests_total{method="other",route="/api/projects/:projectId",status="2xx"} 1');
  assert.match(text, 'svc_trigger_calls_total{outcome="refused",reason="other"} 1');
  assert.match(text, 'svc_trigger_calls_total{outcome="error",reason="internal_error"} 1');
  assert.match(text, 'svc_webhook_attempts_total{outcome="failure",error="other"} 1');
  assert.not.match(text, 'PROPFIND');
  assert.not.match(text, 'nobody listed');
});

test.run();

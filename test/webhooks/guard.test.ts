// The address guard (spec: Outbound address guard) as a pure function: a large table of literal forms
// as they can be written in a webhook URL, resolver answers (several addresses, rebinding), the https
// rule, and exactly what the allowlist exempts.
import { createHook } from 'node:async_hooks';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { EMPTY_ALLOWLIST, checkTarget, checkTargetWithin, compileAllowlist, parseAddress, parseAllowlist, refusedRange } from '../../functions/webhooks/guard.ts';
import type { Resolver } from '../../functions/webhooks/guard.ts';

const noLookup: Resolver = async (host) => {
  throw new Error(`a literal must not be looked up (${host})`);
};
const dns =
  (table: Record<string, string[]>): Resolver =>
  async (host) => {
    const list = table[host.replace(/\.$/, '')];
    if (!list) throw Object.assign(new Error('not found'), { code: 'ENOTFOUND' });
    return list.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));
  };

/** URL forms that must all be refused: [url, what it really is]. */
const REFUSED: [string, string][] = [
  // IPv4 loopback in every spelling the URL parser accepts
  ['https://127.0.0.1/', 'dotted'],
  ['https://127.1/', 'short form'],
  ['https://127.0.1/', 'short form, 3 parts'],
  ['https://2130706433/', 'decimal'],
  ['https://0x7f000001/', 'hex'],
  ['https://0x7f.0x0.0x0.0x1/', 'hex parts'],
  ['https://0x7F.1/', 'hex short'],
  ['https://017700000001/', 'octal'],
  ['https://0177.0.0.1/', 'octal part'],
  ['https://0177.0000.0000.0001/', 'octal, zero padded'],
  ['https://127.000.000.001/', 'decimal, zero padded (octal zeros)'],
  ['https://%31%32%37.0.0.1/', 'percent-encoded'],
  ['https://１２７.０.０.１/', 'full-width digits'],
  ['https://127.0.0.1./', 'trailing dot'],
  ['https://127.255.255.254:8443/', 'anywhere in 127/8, with a port'],
  // other IPv4 ranges
  ['https://0.0.0.0/', 'unspecified'],
  ['https://0/', 'unspecified, one part'],
  ['https://0.1.2.3/', '"this network" 0/8'],
  ['https://10.0.0.1/', 'private 10/8'],
  ['https://167772161/', 'private 10/8 as decimal'],
  ['https://172.16.0.1/', 'private 172.16/12'],
  ['https://172.31.255.255/', 'private 172.16/12, top'],
  ['https://192.168.1.1/', 'private 192.168/16'],
  ['https://0xc0a80101/', 'private 192.168/16 as hex'],
  ['https://100.64.0.1/', 'carrier-grade NAT'],
  ['https://100.127.255.255/', 'carrier-grade NAT, top'],
  ['https://169.254.169.254/', 'cloud metadata (link-local)'],
  ['https://2852039166/', 'cloud metadata as decimal'],
  ['https://0xa9.0xfe.0xa9.0xfe/', 'cloud metadata as hex parts'],
  ['https://169.254.0.1/', 'link-local'],
  ['https://224.0.0.1/', 'multicast'],
  ['https://239.255.255.250/', 'multicast SSDP'],
  ['https://255.255.255.255/', 'broadcast'],
  ['https://240.0.0.1/', 'reserved 240/4'],
  ['https://192.0.0.1/', 'IETF protocol assignments'],
  ['https://192.0.2.1/', 'TEST-NET-1'],
  ['https://198.51.100.1/', 'TEST-NET-2'],
  ['https://203.0.113.1/', 'TEST-NET-3'],
  ['https://198.18.0.1/', 'benchmarking 198.18/15'],
  ['https://198.19.255.255/', 'benchmarking, top'],
  ['https://192.88.99.1/', '6to4 relay anycast'],
  // IPv6
  ['https://[::1]/', 'loopback'],
  ['https://[0:0:0:0:0:0:0:1]/', 'loopback, long form'],
  ['https://[0000:0000:0000:0000:0000:0000:0000:0001]/', 'loopback, zero padded'],
  ['https://[::]/', 'unspecified'],
  ['https://[::ffff:127.0.0.1]/', 'IPv4-mapped loopback'],
  ['https://[::ffff:7f00:1]/', 'IPv4-mapped loopback, hex'],
  ['https://[::ffff:8.8.8.8]/', 'IPv4-mapped, even of a public address'],
  ['https://[::ffff:169.254.169.254]/', 'IPv4-mapped metadata'],
  ['https://[0:0:0:0:0:ffff:a9fe:a9fe]/', 'IPv4-mapped metadata, long'],
  ['https://[::127.0.0.1]/', 'IPv4-compatible (deprecated)'],
  ['https://[::8.8.8.8]/', 'IPv4-compatible of a public address'],
  ['https://[::ffff:0:127.0.0.1]/', 'SIIT IPv4-translated'],
  ['https://[64:ff9b::127.0.0.1]/', 'NAT64 well-known prefix'],
  ['https://[64:ff9b::8.8.8.8]/', 'NAT64 of a public address'],
  ['https://[64:ff9b:1::a9fe:a9fe]/', 'NAT64 local-use prefix'],
  ['https://[2002:7f00:1::]/', '6to4 of loopback'],
  ['https://[2002:808:808::1]/', '6to4 of a public address'],
  ['https://[2001:0:4136:e378:8000:63bf:3fff:fdd2]/', 'Teredo'],
  ['https://[fe80::1]/', 'link-local'],
  ['https://[febf:ffff::1]/', 'link-local, top of fe80::/10'],
  ['https://[fec0::1]/', 'site-local (deprecated)'],
  ['https://[fc00::1]/', 'unique-local fc00::/7'],
  ['https://[fd00:ec2::254]/', 'cloud metadata over IPv6 (unique-local)'],
  ['https://[ff02::1]/', 'multicast'],
  ['https://[ff05::c]/', 'multicast site-local'],
  ['https://[2001:db8::1]/', 'documentation'],
  ['https://[3fff::1]/', 'documentation (RFC 9637)'],
  ['https://[2001:2::1]/', 'benchmarking'],
  ['https://[100::1]/', 'discard-only'],
  ['https://[2001:10::1]/', 'ORCHID'],
  ['https://[5f00::1]/', 'segment routing'],
  ['https://[::2]/', 'reserved ::/8'],
  ['https://[4000::1]/', 'not global unicast (outside 2000::/3)'],
];

const ALLOWED: [string, string][] = [
  ['https://8.8.8.8/', 'public IPv4'],
  ['https://134744072/', 'public IPv4 as decimal'],
  ['https://1.1.1.1:8443/x', 'public with a port'],
  ['https://[2606:4700:4700::1111]/', 'public IPv6'],
  ['https://[2a00:1450:4001:80b::200e]/', 'public IPv6 (another)'],
  ['https://100.128.0.1/', 'just above CGNAT'],
  ['https://172.32.0.1/', 'just above 172.16/12'],
  ['https://11.0.0.1/', 'just above 10/8'],
];

test(`${REFUSED.length} literal forms of refused addresses are all blocked_address, without a DNS lookup`, async () => {
  for (const [url, what] of REFUSED) {
    const r = await checkTarget(new URL(url), EMPTY_ALLOWLIST, noLookup);
    assert.is(r.ok, false, `${url} (${what}) must be refused`);
    if (!r.ok) assert.is(r.error, 'blocked_address', `${url} (${what}): ${r.detail}`);
  }
});

test('public literals pass, and the address to connect to is the checked one', async () => {
  for (const [url, what] of ALLOWED) {
    const r = await checkTarget(new URL(url), EMPTY_ALLOWLIST, noLookup);
    assert.ok(r.ok, `${url} (${what})`);
  }
  const r = await checkTarget(new URL('https://134744072/'), EMPTY_ALLOWLIST, noLookup);
  assert.equal(r.ok && [r.address, r.family, r.literal], ['8.8.8.8', 4, true]);
});

test('zone ids: refused by the URL parser; in resolver answers the zone is stripped before the check', async () => {
  assert.throws(() => new URL('https://[fe80::1%25eth0]/'));
  assert.is(refusedRange(parseAddress('fe80::1%eth0')!), 'linkLocal');
  assert.is(parseAddress('[2606:4700::1111]')!.toString(), '2606:4700::1111');
  const r = await checkTarget(new URL('https://zoned.example/'), EMPTY_ALLOWLIST, dns({ 'zoned.example': ['fe80::1%eth0'] }));
  assert.is(r.ok, false);
});

test('names: every resolved address is checked; one refused address refuses the host (DNS rebinding shapes)', async () => {
  const resolve = dns({
    'good.example': ['93.184.216.34', '2606:2800:220:1:248:1893:25c8:1946'],
    'mixed.example': ['93.184.216.34', '127.0.0.1'],
    'mixed6.example': ['93.184.216.34', '::ffff:10.0.0.1'],
    'meta.example': ['169.254.169.254'],
    'nip.example': ['10.1.2.3'],
  });
  const good = await checkTarget(new URL('https://good.example/hook'), EMPTY_ALLOWLIST, resolve);
  assert.equal(good.ok && [good.address, good.literal, good.addresses.length], ['93.184.216.34', false, 2]);
  for (const host of ['mixed.example', 'mixed6.example', 'meta.example', 'nip.example']) {
    const r = await checkTarget(new URL(`https://${host}/`), EMPTY_ALLOWLIST, resolve);
    assert.equal(r.ok ? 'ok' : r.error, 'blocked_address', host);
  }
  const missing = await checkTarget(new URL('https://nowhere.example/'), EMPTY_ALLOWLIST, resolve);
  assert.equal(missing.ok ? 'ok' : missing.error, 'dns_error');
  const empty = await checkTarget(new URL('https://empty.example/'), EMPTY_ALLOWLIST, async () => []);
  assert.equal(empty.ok ? 'ok' : empty.error, 'dns_error');
});

test('https only: http:// to a public host is refused unless the host is on the allowlist', async () => {
  const resolve = dns({ 'public.example': ['93.184.216.34'], 'hooks.internal': ['10.1.2.3'] });
  const plain = await checkTarget(new URL('http://public.example/'), EMPTY_ALLOWLIST, resolve);
  assert.equal(plain.ok ? 'ok' : [plain.error, /https/.test(plain.detail)], ['blocked_address', true]);
  const byName = await checkTarget(new URL('http://public.example/'), compileAllowlist(['public.example']), resolve);
  assert.ok(byName.ok);
  const byCidr = await checkTarget(new URL('http://hooks.internal/'), compileAllowlist(['10.0.0.0/8']), resolve);
  assert.ok(byCidr.ok, 'every address inside an allowlisted CIDR: the host is on the allowlist');
  const ftp = await checkTarget(new URL('ftp://public.example/'), EMPTY_ALLOWLIST, resolve);
  assert.equal(ftp.ok ? 'ok' : ftp.error, 'invalid_url');
});

test('what the allowlist exempts: a listed name allows its addresses; a CIDR allows only the addresses inside it', async () => {
  const resolve = dns({
    localhost: ['127.0.0.1', '::1'],
    'receiver.test': ['127.0.0.1'],
    'split.test': ['127.0.0.1', '169.254.169.254'],
    'sub.receiver.test': ['127.0.0.1'],
  });
  const names = compileAllowlist(['receiver.test', 'LocalHost.']);
  assert.ok((await checkTarget(new URL('http://receiver.test:9000/'), names, resolve)).ok);
  assert.ok((await checkTarget(new URL('http://RECEIVER.test./'), names, resolve)).ok, 'case and trailing dot do not matter');
  assert.ok((await checkTarget(new URL('http://localhost/'), names, resolve)).ok, 'a listed name allows all its addresses');
  assert.not.ok((await checkTarget(new URL('http://sub.receiver.test/'), names, resolve)).ok, 'no wildcard: subdomains are not listed');
  assert.not.ok((await checkTarget(new URL('http://127.0.0.1/'), names, resolve)).ok, 'a name entry does not allow the literal address');
  const cidr = compileAllowlist(['127.0.0.0/8']);
  assert.ok((await checkTarget(new URL('http://127.0.0.1:1234/'), cidr, resolve)).ok);
  assert.ok((await checkTarget(new URL('http://receiver.test/'), cidr, resolve)).ok);
  const split = await checkTarget(new URL('https://split.test/'), cidr, resolve);
  assert.equal(split.ok ? 'ok' : [split.error, /169\.254\.169\.254/.test(split.detail)], ['blocked_address', true], 'addresses outside the CIDR are still checked');
  const localhost = await checkTarget(new URL('http://localhost/'), cidr, resolve);
  assert.not.ok(localhost.ok, '::1 is not inside 127.0.0.0/8');
  assert.not.ok((await checkTarget(new URL('http://[::ffff:127.0.0.1]/'), cidr, resolve)).ok, 'a mapped form is not inside an IPv4 CIDR');
  assert.ok((await checkTarget(new URL('http://[::1]/'), compileAllowlist(['::1']), resolve)).ok, 'a bare IPv6 address is a /128');
  assert.ok((await checkTarget(new URL('http://10.9.8.7/'), compileAllowlist(['10.9.8.7']), resolve)).ok, 'a bare IPv4 address is a /32');
  assert.not.ok((await checkTarget(new URL('http://10.9.8.6/'), compileAllowlist(['10.9.8.7']), resolve)).ok);
});

/** A resolver that records every name it is asked for. */
const recording = (table: Record<string, string[]>) => {
  const asked: string[] = [];
  const resolve: Resolver = (host) => (asked.push(host), dns(table)(host));
  return { asked, resolve };
};

const LOOPBACK_NAMES = ['localhost', 'localhost.', 'LOCALHOST', 'LocalHost.', 'api.localhost', 'a.b.localhost.', 'Hooks.LOCALHOST'];

for (const host of LOOPBACK_NAMES) {
  test(`loopback name ${host} (RFC 6761) → blocked_address before any lookup, even with loopback CIDRs allowlisted`, async () => {
    const { asked, resolve } = recording({ [host.toLowerCase().replace(/\.$/, '')]: ['93.184.216.34'] });
    for (const allow of [EMPTY_ALLOWLIST, compileAllowlist(['127.0.0.0/8', '::1', 'other.test'])]) {
      const r = await checkTarget(new URL(`https://${host}:8443/hook`), allow, resolve);
      assert.equal(r.ok ? 'ok' : r.error, 'blocked_address');
      if (!r.ok) assert.match(r.detail, /loopback name \(RFC 6761\)/);
    }
    assert.equal(asked, [], 'the resolver was not asked');
  });
}

test('names that only look like localhost are resolved and checked as usual', async () => {
  const { asked, resolve } = recording({ 'localhost.example.com': ['93.184.216.34'], 'mylocalhost': ['93.184.216.34'], 'localhost-1.test': ['93.184.216.34'], 'localhost.test': ['93.184.216.34'] });
  for (const host of ['localhost.example.com', 'mylocalhost', 'localhost-1.test', 'localhost.test']) {
    assert.ok((await checkTarget(new URL(`https://${host}/`), EMPTY_ALLOWLIST, resolve)).ok, host);
  }
  assert.equal(asked, ['localhost.example.com', 'mylocalhost', 'localhost-1.test', 'localhost.test']);
});

test('an allowlisted loopback name is looked up and allowed; the entry covers only the name it lists', async () => {
  const { asked, resolve } = recording({ localhost: ['127.0.0.1', '::1'], 'hooks.localhost': ['127.0.0.1'] });
  const listed = compileAllowlist(['localhost']);
  assert.ok((await checkTarget(new URL('http://localhost:9000/'), listed, resolve)).ok);
  assert.ok((await checkTarget(new URL('http://LOCALHOST./'), listed, resolve)).ok, 'case and trailing dot do not matter');
  const sub = await checkTarget(new URL('http://hooks.localhost/'), listed, resolve);
  assert.equal(sub.ok ? 'ok' : sub.error, 'blocked_address', 'a subdomain is not named by the entry');
  assert.equal(asked, ['localhost', 'localhost.'], 'the unlisted name was not looked up');
  assert.ok((await checkTarget(new URL('http://hooks.localhost/'), compileAllowlist(['hooks.localhost']), resolve)).ok);
});

test('allowlist text: one entry per line, validated per line, duplicates dropped, never echoed in errors', () => {
  const ok = parseAllowlist('receiver.test\n\n  10.0.0.0/8  \r\n[::1]\nfd00::/8\n192.168.1.5\nRECEIVER.TEST\nhooks-1.corp.example.com.\n');
  assert.equal(ok, { entries: ['receiver.test', '10.0.0.0/8', '::1', 'fd00::/8', '192.168.1.5', 'hooks-1.corp.example.com'], errors: {} });
  const bad = parseAllowlist('ok.example\n*.example.com\nhttp://x.example\n10.0.0.0/33\n127.1\n0x7f000001\n10/8\nfe80::1%eth0\n::1/129\nhost name\na..b\n1.2.3.4/8/9\nexample.123');
  assert.equal(bad.entries, ['ok.example']);
  assert.equal(Object.keys(bad.errors), ['allowlist.line2', 'allowlist.line3', 'allowlist.line4', 'allowlist.line5', 'allowlist.line6', 'allowlist.line7', 'allowlist.line8', 'allowlist.line9', 'allowlist.line10', 'allowlist.line11', 'allowlist.line12', 'allowlist.line13']);
  assert.not.ok(JSON.stringify(bad.errors).includes('x.example'));
  assert.ok(parseAllowlist(Array.from({ length: 501 }, (_, i) => `h${i}.example`).join('\n')).errors.allowlist);
});

test('a lookup that does not answer in time is a timeout naming the host; one that answers leaves no timer behind', async () => {
  const hang: Resolver = () => new Promise(() => {});
  const started = performance.now();
  const alive = setInterval(() => {}, 1000); // the deadline is unref'd: something must keep this process up meanwhile
  const late = await checkTargetWithin(new URL('https://hooks.example.com/x'), EMPTY_ALLOWLIST, hang, 50).finally(() => clearInterval(alive));
  assert.ok(performance.now() - started >= 45, 'it waited for the deadline');
  assert.equal(late, { ok: false, error: 'timeout', detail: 'resolving hooks.example.com took longer than 50 ms' });

  // Every timer created during a guarded check that answers is cleared by the time it returns (an attempt
  // used to leave its deadline pending for the whole timeout, 10 s, behind every delivery).
  const live = new Set<number>();
  const hook = createHook({
    init: (id, type) => void (type === 'Timeout' && live.add(id)),
    destroy: (id) => void live.delete(id),
  }).enable();
  try {
    const fine = await checkTargetWithin(new URL('https://hooks.example.com/x'), EMPTY_ALLOWLIST, dns({ 'hooks.example.com': ['93.184.216.34'] }), 10_000);
    assert.equal(fine, { ok: true, address: '93.184.216.34', family: 4, literal: false, addresses: ['93.184.216.34'] });
    await new Promise((r) => setImmediate(r));
    assert.is(live.size, 0, 'no timer left pending');
  } finally {
    hook.disable();
  }
});

test.run();

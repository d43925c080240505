// Fuzz every operation of GET /api/openapi.json on the real server with schema-shaped input whose
// strings and keys are replaced by text PostgreSQL cannot store (U+0000, unpaired surrogates, sent as
// JSON escapes), very long strings, unknown keys, wrong types and bodies where none belongs. About
// 2000 requests, seeded, so a failure repeats. Nothing may answer 5xx or log an unhandled error; a
// NUL or lone surrogate in a known text field is a 400 naming that field; error answers stay small.
import { Agent, request } from 'node:http';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { seeded } from '../helpers/random.ts';
import { startServer } from '../helpers/server.ts';
import type { RunningServer } from '../helpers/server.ts';

/* eslint-disable @typescript-eslint/no-explicit-any */
const TOTAL = 2000;
const PARALLEL = 4;
const BAD = ['a\u0000b', '\u0000', 'x\ud800', '\udc00y', 'end\ud83d', '\udfff\ud800', 'ok\u0000\ud800'];
const BAD_PATH = ['%00', 'a%00b', '%ED%A0%80', '%C0%80', 'a'.repeat(3000), '..%2F..%2Fetc', '%', '%F0%9F%98%80', '%E2%80%AE'];

let server: RunningServer;
test.before(async () => {
  server = await startServer({ admin: true });
});
test.after(async () => (agent.destroy(), server?.cleanup()));

const rand = seeded(0x5eed);
const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)];

const STRINGS: Record<string, string> = { email: 'fuzz@example.test', repo: 'acme/fuzz', code: 'ABCD-2345', url: 'https://example.test/hook' };

/** A valid-looking value for a JSON schema (enums take their first value). */
function sample(s: any, name = ''): unknown {
  if (!s) return 'fuzz';
  if ('const' in s) return s.const;
  if (s.enum) return s.enum[0];
  if (s.anyOf) return sample(s.anyOf.find((x: any) => x.type !== 'null') ?? s.anyOf[0], name);
  switch (s.type) {
    case 'object':
      return Object.fromEntries(Object.entries<any>(s.properties ?? {}).map(([k, v]) => [k, sample(v, k)]));
    case 'array':
      return Array.from({ length: Math.max(1, s.minItems ?? 1) }, () => sample(s.items, name));
    case 'number':
    case 'integer':
      return s.minimum ?? 1;
    case 'boolean':
      return false;
    case 'null':
      return null;
    default:
      if (s.format === 'date-time') return new Date(Date.now() + 86_400_000).toISOString();
      return STRINGS[name] ?? (s.format === 'email' ? STRINGS.email : 'fuzz-1');
  }
}

const isText = (s: any): boolean => s?.type === 'string' || (s?.anyOf ?? []).some(isText);

interface Op {
  method: string;
  path: string;
  pathParams: any[];
  query: any[];
  body: any | null;
}
interface Case {
  op: Op;
  url: string;
  body?: string;
  type?: string;
  /** A 400 with this code naming this field is expected. */
  names?: { code: string; field: string };
}

function operations(doc: any): Op[] {
  const ops: Op[] = [];
  for (const [path, item] of Object.entries<any>(doc.paths)) {
    for (const [method, op] of Object.entries<any>(item)) {
      const params = op.parameters ?? [];
      ops.push({
        method: method.toUpperCase(),
        path,
        pathParams: params.filter((p: any) => p.in === 'path'),
        query: params.filter((p: any) => p.in === 'query'),
        body: op.requestBody?.content?.['application/json']?.schema ?? null,
      });
    }
  }
  // Destructive last: deleting the project would turn the later body checks into 404s.
  return ops.sort((a, b) => Number(a.method === 'DELETE') - Number(b.method === 'DELETE'));
}

/** Build the URL, with real ids (or valid-looking ones) unless a parameter is overridden. */
function urlOf(op: Op, ids: Record<string, string>, override: Record<string, string> = {}, query = '') {
  let path = op.path;
  for (const p of op.pathParams) {
    const value = override[p.name] ?? (p.schema.enum ? p.schema.enum[0] : (ids[`${op.path}:${p.name}`] ?? ids[p.name] ?? 'fuzz-missing-1'));
    path = path.replace(`{${p.name}}`, override[p.name] !== undefined ? value : encodeURIComponent(value));
  }
  return query ? `${path}?${query}` : path;
}

function casesFor(op: Op, ids: Record<string, string>): Case[] {
  const cases: Case[] = [];
  const url = urlOf(op, ids);
  const json = (v: unknown) => JSON.stringify(v); // lone surrogates come out as \ud800 escapes
  for (const p of op.pathParams) for (const bad of BAD_PATH.slice(0, 4)) cases.push({ op, url: urlOf(op, ids, { [p.name]: bad }) });
  for (const q of op.query) {
    for (const bad of ['a\u0000b', '\u0000']) {
      cases.push({ op, url: urlOf(op, ids, {}, `${q.name}=${encodeURIComponent(bad)}`), names: { code: 'invalid_query', field: q.name } });
    }
    cases.push({ op, url: urlOf(op, ids, {}, `${q.name}=${'q'.repeat(8000)}`) });
  }
  if (op.query.length) cases.push({ op, url: urlOf(op, ids, {}, 'a%00b=1') });
  if (!op.body) {
    cases.push({ op, url, body: json({ pad: 'x'.repeat(5000) }), type: 'application/json' }); // over 4 KiB: 413
    cases.push({ op, url, body: json({ [BAD[0]]: BAD[2] }), type: 'application/json' }); // small: ignored
    return cases;
  }
  const base = sample(op.body) as Record<string, unknown>;
  for (const [prop, schema] of Object.entries<any>(op.body.properties ?? {})) {
    if (isText(schema)) {
      for (const bad of BAD.slice(0, 4)) cases.push({ op, url, body: json({ ...base, [prop]: bad }), names: { code: 'invalid_body', field: prop } });
      cases.push({ op, url, body: json({ ...base, [prop]: 'L'.repeat(200_000) }) });
    }
    if (schema.type === 'array' && isText(schema.items)) {
      cases.push({ op, url, body: json({ ...base, [prop]: ['fine', BAD[0]] }), names: { code: 'invalid_body', field: `${prop}.1` } });
    }
    if (schema.type === 'object') cases.push({ op, url, body: json({ ...base, [prop]: { [BAD[2]]: { deep: [BAD[0]] } } }), names: { code: 'invalid_body', field: `${prop}.x\ufffd` } });
  }
  cases.push({ op, url, body: json({ ...base, [BAD[0]]: 1 }), names: { code: 'invalid_body', field: 'a\ufffdb' } });
  cases.push({ op, url, body: json({ ...base, ['K'.repeat(100_000)]: 1 }) });
  // 5000 levels of nesting, written as text (JSON.stringify itself would overflow the stack).
  cases.push({ op, url, body: `{"deep":${'['.repeat(5000)}"${'\\u0000'}"${']'.repeat(5000)}}` });
  cases.push({ op, url, body: json(BAD[0]) });
  cases.push({ op, url, body: json(base), type: 'application/json-patch+json' });
  return cases;
}

/** A seeded random mutation of an operation's input, to fill up to TOTAL requests. */
function mutation(op: Op, ids: Record<string, string>): Case {
  const url = urlOf(op, ids);
  const roll = rand();
  if (op.pathParams.length && roll < 0.15) return { op, url: urlOf(op, ids, { [pick(op.pathParams).name]: pick(BAD_PATH) }) };
  if (op.query.length && roll < 0.3) return { op, url: urlOf(op, ids, {}, `${pick(op.query).name}=${pick(BAD_PATH)}`) };
  if (!op.body) return { op, url, body: JSON.stringify({ [pick(BAD)]: pick(BAD) }).repeat(1 + Math.floor(rand() * 3)), type: 'application/json' };
  const body: Record<string, unknown> = { ...(sample(op.body) as object) };
  const props = Object.keys(op.body.properties ?? {});
  const value = () => pick<unknown>([pick(BAD), [pick(BAD)], { [pick(BAD)]: pick(BAD) }, 12, null, true, 'v'.repeat(Math.floor(rand() * 70_000))]);
  for (let i = 0, n = 1 + Math.floor(rand() * 3); i < n; i++) {
    if (props.length && rand() < 0.7) body[pick(props)] = value();
    else body[pick(BAD) + Math.floor(rand() * 100)] = value();
  }
  return { op, url, body: JSON.stringify(body) };
}

const agent = new Agent({ keepAlive: true, maxSockets: PARALLEL });

/** node:http rather than fetch: GET and DELETE may carry a body here. */
function send(c: Case): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const body = c.body === undefined ? undefined : Buffer.from(c.body);
    const headers: Record<string, string | number> = { authorization: `Bearer ${server.admin.token}` };
    if (body) Object.assign(headers, { 'content-type': c.type ?? 'application/json', 'content-length': body.length });
    const req = request(`${server.url}${c.url}`, { method: c.op.method, headers, agent }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (d: Buffer) => chunks.push(d));
      res.on('end', () => resolve({ status: res.statusCode!, text: Buffer.concat(chunks).toString() }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

test('every operation, ~2000 fuzzed requests: no 5xx, NUL/surrogates named with 400, small error answers', async () => {
  const doc = await (await fetch(`${server.url}/api/openapi.json`)).json();
  const ops = operations(doc);
  assert.ok(ops.length >= 40, `${ops.length} operations`);
  // Real ids where access or lookups need them; the rest only need to look valid.
  const project = await (await server.api('/api/projects', { method: 'POST', json: { name: 'Fuzz', repo: 'acme/fuzz' } })).json();
  const runner = await (await server.api('/api/runners', { method: 'POST', json: { name: 'fuzz' } })).json();
  const other = await (await server.api('/api/users', { method: 'POST', json: { email: 'other@example.test', name: 'Other' } })).json();
  const spare = await (await server.api('/api/tokens', { method: 'POST', json: { name: 'spare' } })).json();
  const ids: Record<string, string> = { projectId: project.id, runnerId: runner.runner.id, userId: other.user.id, tokenId: spare.id, name: 'fuzz-missing', model: 'fuzz-model' };

  const fixed = ops.flatMap((op) => casesFor(op, ids));
  const extra: Case[] = [];
  while (fixed.length + extra.length < TOTAL) extra.push(mutation(pick(ops), ids));
  const all = [...fixed, ...extra].sort((a, b) => Number(a.op.method === 'DELETE') - Number(b.op.method === 'DELETE'));

  const failures: string[] = [];
  const seen = new Map<number, number>();
  const started = Date.now();
  for (let i = 0; i < all.length; i += PARALLEL) {
    const batch = all.slice(i, i + PARALLEL);
    const answers = await Promise.all(batch.map(send));
    answers.forEach(({ status, text }, j) => {
      const c = batch[j];
      seen.set(status, (seen.get(status) ?? 0) + 1);
      const label = `${c.op.method} ${c.url.slice(0, 120)} ${(c.body ?? '').slice(0, 80)}`;
      if (status >= 500) failures.push(`${status} ${label}: ${text.slice(0, 200)}`);
      if (status >= 400 && Buffer.byteLength(text) > 4096) failures.push(`${status} answer of ${Buffer.byteLength(text)} bytes: ${label}`);
      if (c.names) {
        const fields = status === 400 ? JSON.parse(text).error : null;
        if (fields?.code !== c.names.code || !/U\+0000/.test(fields?.fields?.[c.names.field] ?? '')) {
          failures.push(`expected 400 ${c.names.code} naming ${JSON.stringify(c.names.field)}, got ${status}: ${label} → ${text.slice(0, 200)}`);
        }
      }
    });
  }
  assert.ok(all.length >= TOTAL && all.length < TOTAL * 1.2, `${all.length} requests`);
  assert.ok(all.filter((c) => c.names).length >= 100, 'enough cases name a field');
  for (const status of [400, 413, 415]) assert.ok(seen.get(status), `some answers were ${status}: ${JSON.stringify([...seen])}`);
  assert.equal(failures.slice(0, 20), [], `${failures.length} failures in ${all.length} requests (${Date.now() - started} ms)`);

  assert.is((await fetch(`${server.url}/health`)).status, 200, 'still healthy');
  assert.is((await server.api('/api/me')).status, 200, 'the admin token still works');
  assert.not.match(server.output(), /unhandled error|internal_error/, 'no unhandled error logged');
});

test.run();

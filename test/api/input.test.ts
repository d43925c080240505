// Bad input against the real server: text PostgreSQL cannot store (U+0000, unpaired surrogates, sent
// as JSON escapes), echoes that would amplify, content types that only look like JSON, and bodies on
// routes that take none. Each is a 400/413/415 naming what is wrong, never a 500, and nothing is written.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { startServer } from '../helpers/server.ts';
import type { RunningServer } from '../helpers/server.ts';

let server: RunningServer;
test.before(async () => {
  server = await startServer({ admin: true });
});
test.after(async () => server?.cleanup());

/** Send a JSON text as is (so `\u0000` and `\ud800` escapes reach the server's JSON.parse). */
const send = (method: string, path: string, text: string, type = 'application/json') =>
  server.api(path, { method, headers: { 'content-type': type }, body: text });

async function refused(res: Response, code: string, field: string) {
  const text = await res.text();
  assert.is(res.status, 400, text);
  const { error } = JSON.parse(text);
  assert.is(error.code, code, text);
  assert.match(error.fields?.[field] ?? '', /U\+0000 or unpaired surrogates/, `names ${field}: ${text}`);
}

const projectNames = async () => ((await (await server.api('/api/projects')).json()).projects as { name: string }[]).map((p) => p.name);

test('U+0000 in a project name → 400 invalid_body naming `name`, nothing written', async () => {
  await refused(await send('POST', '/api/projects', '{"name":"a\\u0000b","repo":"acme/nul"}'), 'invalid_body', 'name');
  assert.not.ok((await projectNames()).some((n) => n.startsWith('a')), 'no project created');
});

test('an unpaired high surrogate in a project name → 400 naming `name`, nothing written', async () => {
  await refused(await send('POST', '/api/projects', '{"name":"x\\ud800y","repo":"acme/sur"}'), 'invalid_body', 'name');
  assert.not.ok((await projectNames()).some((n) => n.startsWith('x')), 'no project created (not even with U+FFFD)');
});

test('an unpaired low surrogate → 400; a proper surrogate pair (emoji) is accepted', async () => {
  await refused(await send('POST', '/api/projects', '{"name":"lo\\udc00w","repo":"acme/low"}'), 'invalid_body', 'name');
  const ok = await send('POST', '/api/projects', '{"name":"pair \\ud83d\\ude00","repo":"acme/pair"}');
  assert.is(ok.status, 201, await ok.clone().text());
  assert.is((await ok.json()).name, 'pair 😀');
});

test('U+0000 in an object key → 400 naming the key path, not 500', async () => {
  const res = await send('POST', '/api/projects', '{"name":"k","repo":"acme/k","bad\\u0000key":1}');
  const text = await res.text();
  assert.is(res.status, 400, text);
  const { error } = JSON.parse(text);
  assert.equal(Object.keys(error.fields), ['bad\ufffdkey'], 'the key is named, its NUL shown as U+FFFD');
});

test('U+0000 inside an array element → 400 naming `events.1`', async () => {
  const res = await send('POST', '/api/webhooks', '{"url":"https://example.test/h","events":["run.finished","a\\u0000"]}');
  await refused(res, 'invalid_body', 'events.1');
});

test('U+0000 in nested command arguments → 400 naming `args.projectId`', async () => {
  const made = await (await server.api('/api/runners', { method: 'POST', json: { name: 'nested' } })).json();
  const res = await send('POST', `/api/runners/${made.runner.id}/commands`, '{"name":"anything","args":{"projectId":"p\\u0000"}}');
  await refused(res, 'invalid_body', 'args.projectId');
});

test('U+0000 in token, runner, user names and settings → 400 naming the field', async () => {
  await refused(await send('POST', '/api/tokens', '{"name":"t\\u0000"}'), 'invalid_body', 'name');
  await refused(await send('POST', '/api/runners', '{"name":"r\\ud800"}'), 'invalid_body', 'name');
  await refused(await send('POST', '/api/users', '{"email":"u@example.test","name":"u\\u0000"}'), 'invalid_body', 'name');
  const me = (await (await server.api('/api/me')).json()).user;
  await refused(await send('PATCH', `/api/users/${me.id}`, '{"name":"me\\udfff"}'), 'invalid_body', 'name');
  await refused(await send('PATCH', '/api/settings', '{"instance.name":"n\\u0000"}'), 'invalid_body', 'instance.name');
  const users = (await (await server.api('/api/users')).json()).users as { email: string; name: string }[];
  assert.not.ok(users.some((u) => u.email === 'u@example.test'), 'no user created');
  assert.is(users.find((u) => u.email === me.email)?.name, me.name, 'own name unchanged');
});

test('U+0000 in a query parameter → 400 invalid_query naming it', async () => {
  await refused(await server.api('/api/audit?action=a%00b'), 'invalid_query', 'action');
});

test('POST /runners/pair with U+0000 in the hostname → 400 naming `hostname` (before any code check)', async () => {
  const res = await fetch(`${server.url}/runners/pair`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"code":"ABCD-2345","hostname":"h\\u0000"}' });
  await refused(res, 'invalid_body', 'hostname');
});

test('/health and static files with U+0000 and broken escapes in the URL → not 5xx', async () => {
  for (const path of ['/health?x=%00', '/%00', '/app.js%00', '/%ED%A0%80', '/a%zz', '/api/projects/%00', '/api/prices/%ED%A0%80']) {
    const res = await fetch(`${server.url}${path}`, { headers: { authorization: `Bearer ${server.admin.token}` } });
    assert.ok(res.status < 500, `${path} → ${res.status}`);
    await res.arrayBuffer();
  }
});

test('a 500 KB unknown key → 400 whose answer is small and names the key once, cut with …', async () => {
  const key = 'k'.repeat(500_000);
  const res = await send('POST', '/api/tokens', JSON.stringify({ name: 'big-key', [key]: 1 }));
  const text = await res.text();
  assert.is(res.status, 400);
  assert.ok(Buffer.byteLength(text) < 1024, `answer is ${Buffer.byteLength(text)} bytes`);
  const { error } = JSON.parse(text);
  assert.equal(Object.keys(error.fields), [`${'k'.repeat(64)}…`]);
  assert.is(error.fields[`${'k'.repeat(64)}…`], 'unknown field');
  assert.is(text.split('k'.repeat(64)).length - 1, 1, 'the key appears once');
  assert.is(error.message, '1 unknown field');
});

test('thousands of unknown keys → at most 20 named, answer small', async () => {
  const body: Record<string, string | number> = { name: 'many' };
  for (let i = 0; i < 5000; i++) body[`unknown_${i}_${'x'.repeat(50)}`] = i;
  const res = await send('POST', '/api/tokens', JSON.stringify(body));
  const text = await res.text();
  assert.is(res.status, 400);
  const { error } = JSON.parse(text);
  assert.is(Object.keys(error.fields).length, 20);
  assert.is(error.message, '5000 unknown fields');
  assert.ok(Buffer.byteLength(text) < 4096, `answer is ${Buffer.byteLength(text)} bytes`);
});

test('a schema field name is still named in the message; unknown keys are not repeated there', async () => {
  const res = await send('POST', '/api/projects', JSON.stringify({ name: '', repo: 'acme/x', colour: 'red' }));
  const { error } = await res.json();
  assert.is(res.status, 400);
  assert.is(error.message, 'invalid fields: name; 1 unknown field');
  assert.is(error.fields.colour, 'unknown field');
});

for (const type of ['application/json-patch+json', 'application/jsonx', 'text/json', 'application/merge-patch+json', 'application/json5']) {
  test(`Content-Type ${type} → 415, nothing written`, async () => {
    const res = await send('POST', '/api/tokens', JSON.stringify({ name: `type-${type}` }), type);
    assert.is(res.status, 415);
    assert.is((await res.json()).error.code, 'unsupported_media_type');
    const tokens = (await (await server.api('/api/tokens')).json()).tokens as { name: string }[];
    assert.not.ok(tokens.some((t) => t.name === `type-${type}`));
  });
}

test('Content-Type application/json; charset=utf-8 (any case) is JSON → 201', async () => {
  for (const type of ['application/json; charset=utf-8', 'Application/JSON;charset=UTF-8', 'application/json ; charset="utf-8"']) {
    const res = await send('POST', '/api/tokens', JSON.stringify({ name: 'charset' }), type);
    assert.is(res.status, 201, `${type}: ${res.status}`);
    await res.arrayBuffer();
  }
});

test('a route without a body: a body up to 4 KiB is ignored, a larger one → 413', async () => {
  const me = (await (await server.api('/api/me')).json()).user;
  const withSmallBody = await send('POST', `/api/users/${me.id}/password-link`, JSON.stringify({ pad: 'x'.repeat(3000) }));
  assert.is(withSmallBody.status, 201);
  await withSmallBody.arrayBuffer();
  const big = await send('POST', `/api/users/${me.id}/password-link`, JSON.stringify({ pad: 'x'.repeat(5000) }));
  assert.is(big.status, 413);
  assert.is((await big.json()).error.code, 'payload_too_large');
  const del = await server.api('/api/tokens/does-not-exist', { method: 'DELETE', body: 'x'.repeat(5000) });
  assert.is(del.status, 413);
  await del.arrayBuffer();
});

test.run();

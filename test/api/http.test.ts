import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { startServer } from '../helpers/server.ts';
import type { RunningServer } from '../helpers/server.ts';
import { ROOT } from '../helpers/db.ts';

let server: RunningServer;
test.before(async () => {
  server = await startServer({ admin: true, env: { MAX_BODY_BYTES: '4096' } });
});
test.after(async () => server?.cleanup());

test('GET /health → 200 {status:"ok", timestamp, version, build} and no-store', async () => {
  const res = await fetch(`${server.url}/health`);
  assert.is(res.status, 200);
  assert.match(res.headers.get('content-type') ?? '', /application\/json/);
  const body = await res.json();
  assert.equal(Object.keys(body).sort(), ['build', 'status', 'timestamp', 'version']);
  assert.is(body.status, 'ok');
  assert.ok(Math.abs(Date.parse(body.timestamp) - Date.now()) < 60_000, 'timestamp is the current time');
});

test('the build that answered: X-Svc-Version is <version>+<12 hex of the commit>, and /health says the same', async () => {
  const res = await fetch(`${server.url}/health`);
  const body = await res.json();
  assert.is(body.version, JSON.parse(readFileSync(`${ROOT}/package.json`, 'utf8')).version);
  // The test driver builds dist/ from this tree just before the run: its commit, or `unknown` without git.
  const git = spawnSync('git', ['rev-parse', 'HEAD'], { cwd: ROOT, encoding: 'utf8' });
  const commit = process.env.SVC_BUILD_COMMIT?.trim().slice(0, 12).toLowerCase() || (git.status === 0 ? git.stdout.trim().slice(0, 12) : 'unknown');
  assert.is(body.build, commit);
  assert.match(body.build, /^([0-9a-f]{12}|unknown)$/);
  assert.is(res.headers.get('x-svc-version'), `${body.version}+${body.build}`);
  const api = await server.api('/api/does-not-exist');
  assert.is(api.headers.get('x-svc-version'), `${body.version}+${body.build}`, 'every answer, an error too');
});

test('unknown route → 404 JSON error with code not_found', async () => {
  const res = await fetch(`${server.url}/api/does-not-exist`);
  assert.is(res.status, 404);
  const body = await res.json();
  assert.is(body.error.code, 'not_found');
  assert.type(body.error.message, 'string');
});

test('wrong method → 405 with Allow header', async () => {
  const res = await fetch(`${server.url}/health`, { method: 'DELETE' });
  assert.is(res.status, 405);
  assert.is(res.headers.get('allow'), 'GET');
  assert.is((await res.json()).error.code, 'method_not_allowed');
  const put = await server.api('/api/schedules', { method: 'PUT' });
  assert.is(put.status, 405);
});

test('HEAD on a GET route answers without a body', async () => {
  const res = await fetch(`${server.url}/health`, { method: 'HEAD' });
  assert.is(res.status, 200);
  assert.is(await res.text(), '');
});

const put = (path: string, body: string, type = 'application/json') =>
  server.api(path, { method: 'PUT', headers: { 'content-type': type }, body });

test('malformed JSON → 400 invalid_json, nothing written', async () => {
  const res = await put('/api/prices/test-model', '{"inputUsdPerMTok": 1,');
  assert.is(res.status, 400);
  assert.is((await res.json()).error.code, 'invalid_json');
  assert.is((await server.api('/api/prices/test-model')).status, 404);
});

test('unknown and invalid fields → 400 naming each field', async () => {
  const res = await put('/api/prices/test-model', JSON.stringify({ inputUsdPerMTok: -1, outputUsdPerMTok: 2, colour: 'red' }));
  assert.is(res.status, 400);
  const { error } = await res.json();
  assert.is(error.code, 'invalid_body');
  assert.is(error.fields.colour, 'unknown field');
  assert.ok(error.fields.inputUsdPerMTok, 'names the negative price');
  assert.is((await server.api('/api/prices/test-model')).status, 404);
});

test('a body that is not JSON → 415', async () => {
  const res = await put('/api/prices/test-model', 'input=1', 'application/x-www-form-urlencoded');
  assert.is(res.status, 415);
  assert.is((await res.json()).error.code, 'unsupported_media_type');
});

test('bad path parameter → 400 naming it', async () => {
  const res = await put('/api/prices/bad%20model!', JSON.stringify({ inputUsdPerMTok: 1, outputUsdPerMTok: 2 }));
  assert.is(res.status, 400);
  assert.ok((await res.json()).error.fields.model);
});

test('declared Content-Length over the limit → 413 before reading', async () => {
  const res = await put('/api/prices/test-model', 'x'.repeat(5000));
  assert.is(res.status, 413);
  assert.is((await res.json()).error.code, 'payload_too_large');
});

test('chunked body over the limit → 413 long before the body is sent whole', async () => {
  // Stream up to 50 MB without Content-Length; the answer must come after a few KB, not at the end.
  const result = await new Promise<{ status: number; sent: number }>((resolve, reject) => {
    let sent = 0;
    let done = false;
    const req = httpRequest(`${server.url}/api/prices/test-model`, {
      method: 'PUT',
      headers: { 'content-type': 'application/json', 'transfer-encoding': 'chunked', authorization: `Bearer ${server.admin.token}` },
    });
    req.on('response', (res) => {
      done = true;
      res.resume();
      resolve({ status: res.statusCode!, sent });
      req.destroy();
    });
    req.on('error', (err) => (done ? undefined : reject(err)));
    const chunk = Buffer.alloc(16 * 1024, 'a');
    const pump = () => {
      while (!done && sent < 50 * 1024 * 1024) {
        sent += chunk.length;
        if (!req.write(chunk)) return void req.once('drain', pump);
      }
      if (!done) req.end();
    };
    req.write('{"inputUsdPerMTok":"');
    pump();
  });
  assert.is(result.status, 413);
  assert.ok(result.sent < 10 * 1024 * 1024, `answered after ${result.sent} bytes`);
});

test('PUT a valid price → 200 and readable back', async () => {
  const res = await put('/api/prices/test-model', JSON.stringify({ inputUsdPerMTok: 1.5, outputUsdPerMTok: 7 }));
  assert.is(res.status, 200);
  const got = await (await server.api('/api/prices/test-model')).json();
  assert.is(got.inputUsdPerMTok, 1.5);
  assert.is(got.outputUsdPerMTok, 7);
  assert.is(got.cacheReadUsdPerMTok, 0);
});

test('sized answers keep their Content-Length (not re-chunked)', async () => {
  const res = await fetch(`${server.url}/health`);
  assert.ok(Number(res.headers.get('content-length')) > 0);
});

test('every response carries a request id; a client id is echoed', async () => {
  const res = await fetch(`${server.url}/health`, { headers: { 'x-request-id': 'abc-123' } });
  assert.is(res.headers.get('x-request-id'), 'abc-123');
  assert.match((await fetch(`${server.url}/health`)).headers.get('x-request-id') ?? '', /^[0-9a-f-]{36}$/);
});

test('the admin page is served at / and paths cannot escape the web directory', async () => {
  const res = await fetch(`${server.url}/`);
  assert.is(res.status, 200);
  assert.match(res.headers.get('content-type') ?? '', /text\/html/);
  const html = await res.text();
  const entry = /<script type="module" src="(\/assets\/app-[A-Z2-7]{8}\.js)">/.exec(html)?.[1];
  assert.ok(entry, 'index.html names the hashed entry');
  assert.is((await fetch(`${server.url}${entry}`)).status, 200);
  const escape = await fetch(`${server.url}/..%2f..%2fpackage.json`);
  assert.is(escape.status, 404);
});

test('cache lifetimes: index.html is revalidated on every load (no-cache); hashed scripts, style sheets and their maps are immutable for a year; anything else 5 minutes', async () => {
  const index = await fetch(`${server.url}/`);
  assert.is(index.headers.get('cache-control'), 'no-cache');
  assert.is((await fetch(`${server.url}/index.html`)).headers.get('cache-control'), 'no-cache');
  const html = await index.text();
  const assets = [...html.matchAll(/(?:href|src)="(\/assets\/[^"]+)"/g)].map((m) => m[1]);
  assert.ok(assets.some((a) => a.endsWith('.js')) && assets.some((a) => a.endsWith('.css')), `a hashed script and style sheet: ${assets}`);
  for (const path of [...assets, `${assets.find((a) => a.endsWith('.js'))}.map`]) {
    const r = await fetch(`${server.url}${path}`);
    assert.is(r.status, 200, path);
    assert.is(r.headers.get('cache-control'), 'public, max-age=31536000, immutable', path);
  }
  // The page chunks load on demand: none is named in index.html, yet each is hashed and immutable too.
  const entry = await (await fetch(`${server.url}${assets.find((a) => /\/app-/.test(a) && a.endsWith('.js'))}`)).text();
  const lazy = [...entry.matchAll(/import\("\.\/([\w-]+-[A-Z2-7]{8}\.js)"\)/g)].map((m) => `/assets/${m[1]}`);
  assert.ok(lazy.length >= 10, `the entry imports each page on demand: ${lazy}`);
  for (const path of lazy) assert.ok(!html.includes(path), `${path} is not loaded up front`);
  const chunk = await fetch(`${server.url}${lazy[0]}`);
  assert.equal([chunk.status, chunk.headers.get('cache-control')], [200, 'public, max-age=31536000, immutable']);
  assert.is((await fetch(`${server.url}/favicon.svg`)).headers.get('cache-control'), 'public, max-age=300');
  assert.is((await fetch(`${server.url}/svc-runner.mjs`)).headers.get('cache-control'), 'public, max-age=300');
  // A name that only looks hashed but is not there is a 404, not something cached for a year.
  const missing = await fetch(`${server.url}/assets/app-AAAAAAAA.js`);
  assert.is(missing.status, 404);
  assert.not.equal(missing.headers.get('cache-control'), 'public, max-age=31536000, immutable');
});

test.run();

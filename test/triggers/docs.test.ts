// docs/triggers.md for callers, checked against the code: the page shows docs/examples/sign-trigger.ts
// and docs/examples/send-trigger.py as they are, and the shell script and TypeScript sender exactly as
// web-static/trigger-snippets.ts makes them for the admin page (so docs and page cannot drift); each of
// the four, run as a caller would against the real server, gets 202 and lands in the delivery log. The
// sample payload the page fills in covers the trigger's allowed paths with values its pattern accepts.
// needs: curl
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { sendTrigger } from '../../docs/examples/sign-trigger.ts';
import { DEFAULT_VALUE_PATTERN, renderArgs } from '../../protocol/placeholders.ts';
import { DOC_EXAMPLE, coversPaths, curlScript, nodeSender, samplePayload, shellQuote } from '../../web-static/trigger-snippets.ts';
import { ROOT } from '../helpers/db.ts';
import { createTrigger, deliveries, setup, skillTrigger } from './_harness.ts';
import type { Made, Setup } from './_harness.ts';

const page = readFileSync(join(ROOT, 'docs/triggers.md'), 'utf8');
/** The body of the fenced block of `lang` that starts with `start`. */
const block = (lang: string, start: string) => new RegExp('```' + lang + '\\n(' + start.replace(/[.*+?^${}()|[\]\\]/g, '\\$&') + '[\\s\\S]*?)```').exec(page)?.[1];

let s: Setup;
let t: Made;
test.before(async () => {
  s = await setup();
  t = await createTrigger(s.server, s.projectId, skillTrigger({ name: 'docs' }));
});
test.after(async () => s?.server.cleanup());

function run(cmd: string, args: string[], env: Record<string, string> = {}, cwd = tmpdir()): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve) => {
    const child = spawn(cmd, args, { cwd, env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/tmp', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (out += d));
    child.on('close', (code) => resolve({ code, out }));
  });
}

const logged = async (deliveryId: string) => (await deliveries(s.server, s.projectId, t.id)).find((d) => d.deliveryId === deliveryId);

test('the page shows docs/examples/sign-trigger.ts and docs/examples/send-trigger.py exactly', () => {
  const ts = readFileSync(join(ROOT, 'docs/examples/sign-trigger.ts'), 'utf8');
  assert.is(block('ts', 'import { createHmac, randomUUID }'), ts.slice(ts.indexOf('import { createHmac')));
  const py = readFileSync(join(ROOT, 'docs/examples/send-trigger.py'), 'utf8');
  assert.is(block('python', 'import hashlib'), py.slice(py.indexOf('import hashlib')));
});

test('the page shows the shell script and the TypeScript sender exactly as the admin page makes them', () => {
  const { url, secret, payload } = DOC_EXAMPLE;
  assert.is(block('sh', 'URL='), curlScript(url, secret, payload) + '\n');
  assert.is(block('ts', '// Sign and send one call'), nodeSender(url, secret, payload));
  assert.ok(nodeSender(url, secret, payload).trimEnd().split('\n').length <= 16, 'the sender stays about 15 lines');
});

test('the shell script, run with sh -c → 202 and its delivery in the log with the rendered args', async () => {
  const r = await run('sh', ['-c', curlScript(t.url, t.secret, { ref: 'main' })]);
  assert.is(r.code, 0, r.out);
  const [answer, status] = r.out.trimEnd().split('\n');
  assert.is(status, 'HTTP 202', r.out);
  const { deliveryId } = JSON.parse(answer);
  assert.match(deliveryId, /^[0-9a-f]{32}$/);
  assert.equal((await logged(deliveryId))?.args, ['--ref', 'main']);
});

test('the TypeScript sender, saved and run with node (tsx) → 202; exit status 1 and the answer when refused', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'sender-'));
  try {
    writeFileSync(join(dir, 'send-trigger.ts'), nodeSender(t.url, t.secret, { ref: 'v1.2' }));
    const ok = await run(process.execPath, ['--import', 'tsx', join(dir, 'send-trigger.ts')], {}, ROOT);
    assert.is(ok.code, 0, ok.out);
    const m = /^202 (\{.*\})$/m.exec(ok.out);
    assert.ok(m, ok.out);
    assert.equal((await logged(JSON.parse(m![1]).deliveryId))?.args, ['--ref', 'v1.2']);
    // The environment's secret wins over the one in the file: a wrong one is refused with 401.
    const wrong = await run(process.execPath, ['--import', 'tsx', join(dir, 'send-trigger.ts')], { SVC_TRIGGER_SECRET: 'not-the-secret' }, ROOT);
    assert.is(wrong.code, 1, wrong.out);
    assert.match(wrong.out, /^401 $/m);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('docs/examples/send-trigger.py, run with python3 → 202; a wrong secret → 401 and exit status 1', async () => {
  const file = join(ROOT, 'docs/examples/send-trigger.py');
  const ok = await run('python3', [file], { SVC_TRIGGER_URL: t.url, SVC_TRIGGER_SECRET: t.secret });
  assert.is(ok.code, 0, ok.out);
  const m = /^202 (\{.*\})$/m.exec(ok.out);
  assert.ok(m, ok.out);
  assert.equal((await logged(JSON.parse(m![1]).deliveryId))?.args, ['--ref', 'main']);
  const wrong = await run('python3', [file], { SVC_TRIGGER_URL: t.url, SVC_TRIGGER_SECRET: 'wrong' });
  assert.is(wrong.code, 1, wrong.out);
  assert.match(wrong.out, /^401 $/m);
});

test('docs/examples/sign-trigger.ts sendTrigger() → 202', async () => {
  const res = await sendTrigger(t.url, t.secret, { ref: 'from-module' }, { delivery: 'docs-module-1' });
  assert.is(res.status, 202);
  assert.equal(await res.json(), { deliveryId: 'docs-module-1', status: 'accepted' });
});

test('a shell-quoted word survives sh whatever it holds (URLs from PUBLIC_URL, JSON bodies)', async () => {
  const word = `it's "quoted" $HOME \`x\` \\ {"a":"b'c"}`;
  const r = await run('sh', ['-c', `printf '%s' ${shellQuote(word)}`]);
  assert.is(r.out, word);
});

test('samplePayload: every allowed path filled with a value the value pattern accepts, arrays for numeric segments', () => {
  const paths = ['ref', 'pr.number', 'pr.head.sha', 'commits.0.id', 'commits.2.id', 'labels.1'];
  const p = samplePayload(paths, DEFAULT_VALUE_PATTERN);
  assert.equal(p, {
    ref: 'example',
    pr: { number: 'example', head: { sha: 'example' } },
    commits: [{ id: 'example' }, 'example', { id: 'example' }],
    labels: ['example', 'example'],
  });
  assert.ok(coversPaths(p, paths));
  const args = paths.map((path) => `{{payload.${path}}}`);
  assert.equal(renderArgs(args, p, DEFAULT_VALUE_PATTERN, paths), { ok: true, args: paths.map(() => 'example') }, 'the sample would fire');
  assert.equal(samplePayload(['n'], '^[0-9]+$'), { n: '42' }, 'a digits-only pattern gets digits');
  assert.equal(samplePayload([], DEFAULT_VALUE_PATTERN), {});
  assert.equal(samplePayload(['a', 'a.b'], DEFAULT_VALUE_PATTERN), { a: 'example' }, 'a path through a value already set is left out');
  assert.equal(samplePayload(['x'], '('), { x: 'example' }, 'an invalid pattern (never saved) still gives a payload');
});

test.run();

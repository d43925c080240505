// Legacy environment names on the server's side (spec: Versioning; protocol/legacy-env.ts): the
// installer the real server serves takes AGENT_FLEET_RUNNER_DIR (with one warning naming
// SVC_RUNNER_DIR; SVC_RUNNER_DIR wins when both are set); the table is the one the docs list; every
// SVC_ name the docs mention is either in the table or one of the named exceptions; and the server's
// own settings have no SVC_ prefix, so none of them needs a legacy name.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { CONFIG_KEYS } from '../../functions/lib/config.ts';
import { installScript } from '../../functions/runners/install.ts';
import { USER_ENV, legacyEnvName } from '../../protocol/legacy-env.ts';
import { ROOT } from '../helpers/db.ts';
import { startServer } from '../helpers/server.ts';
import type { RunningServer } from '../helpers/server.ts';

/** SVC_ names in the docs that are deliberately NOT user-facing settings, each with why. */
const EXCEPTIONS: Record<string, string> = {
  SVC_TEST_DB: 'the test driver',
  SVC_TEST_NO_INSTALL: 'the test driver (never install the programs the tests run)',
  SVC_BUILD_COMMIT: 'the build (esbuild.config.mjs; the image build argument), not a runtime setting',
  SVC_PANES_POLL_MS: 'tests and benchmarks only',
  SVC_EVENTS_POLL_MS: 'tests and benchmarks only',
  SVC_RUNS_POLL_MS: 'tests and benchmarks only',
  SVC_PROFILES_POLL_MS: 'tests only (how often the daemon re-reads its usable profiles)',
  SVC_RUN_SECOND_MS: 'tests and benchmarks only',
  SVC_RUNNER_SERVICE_PLATFORM: 'tests only',
  SVC_INGEST_NO_WATCHER: 'tests only (forces the poll fallback of session ingest)',
  SVC_USAGE_STATS: 'tests and benchmarks only (what a usage call read, one JSON line on stderr)',
  SVC_INGEST_POLL_MS: 'tests and benchmarks only',
  SVC_INGEST_HOLD_MS: 'tests only',
  SVC_USAGE_WORKER_BYTES: 'tests and benchmarks only (forces or keeps off the second thread of `svc-runner usage`)',
  SVC_PR_POLL_MS: 'tests and benchmarks only (fleet.prPollSeconds in milliseconds)',
  SVC_QUEUE_POLL_MS: 'tests and benchmarks only (queue.pollSeconds in milliseconds)',
  SVC_CODEHOST_BACKOFF_MS: 'tests only (the first code-host failure backoff)',
  SVC_RUNNER_COMPILE_CACHE: 'came after the rename, so it never had an AGENT_FLEET_ name; read by the loader (runner/boot.ts) before the runner adopts legacy names',
  SVC_ROLE: 'set by the runner for agents, never read',
  SVC_RUN_ID: 'set by the runner for skill runs, never read from the environment',
  SVC_SKILL: 'set by the runner for skill runs, never read',
  SVC_TRIGGER_URL: "the docs' example caller: the reader's own code",
  SVC_TRIGGER_SECRET: "the docs' example caller and the trigger snippets: the reader's own code",
  SVC_WEBHOOK_SECRET: "the docs' example receiver: the reader's own code",
};

let server: RunningServer;
let dir: string;
test.before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'svc-legacy-'));
  server = await startServer();
});
test.after(async () => {
  await server?.cleanup();
  rmSync(dir, { recursive: true, force: true });
});

/** Run the served installer with sh on a sandboxed machine with the given environment. */
async function install(env: Record<string, string>) {
  const script = await (await fetch(`${server.url}/install-runner.sh`)).text();
  const file = join(dir, `install-${Math.random().toString(36).slice(2)}.sh`);
  writeFileSync(file, script);
  const home = join(dir, 'home');
  mkdirSync(home, { recursive: true });
  const r = spawnSync('sh', [file], { env: { PATH: process.env.PATH!, HOME: home, ...env }, encoding: 'utf8', timeout: 60_000 });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr, home };
}
const warnings = (stderr: string) => stderr.split('\n').filter((l) => l.startsWith('svc-runner install: warning:'));

test('the served installer takes AGENT_FLEET_RUNNER_DIR, with one warning naming SVC_RUNNER_DIR', async () => {
  const legacy = join(dir, 'legacy-bin');
  const r = await install({ AGENT_FLEET_RUNNER_DIR: legacy });
  assert.is(r.status, 0, r.stdout + r.stderr);
  assert.ok(existsSync(join(legacy, 'svc-runner')), 'installed into the legacy directory');
  assert.not.ok(existsSync(join(r.home, '.local', 'bin', 'svc-runner')), 'not into the default one');
  assert.equal(warnings(r.stderr), [
    'svc-runner install: warning: AGENT_FLEET_RUNNER_DIR is deprecated: use SVC_RUNNER_DIR (the AGENT_FLEET_ names are accepted until svc-runner 0.16.0)',
  ]);
});

test('SVC_RUNNER_DIR wins over AGENT_FLEET_RUNNER_DIR; the legacy one is still warned about, once', async () => {
  const svc = join(dir, 'svc-bin');
  const legacy = join(dir, 'ignored-bin');
  const r = await install({ SVC_RUNNER_DIR: svc, AGENT_FLEET_RUNNER_DIR: legacy });
  assert.is(r.status, 0, r.stdout + r.stderr);
  assert.ok(existsSync(join(svc, 'svc-runner')));
  assert.not.ok(existsSync(legacy), 'the legacy directory is not even created');
  assert.equal(warnings(r.stderr), [
    'svc-runner install: warning: AGENT_FLEET_RUNNER_DIR is deprecated and ignored: SVC_RUNNER_DIR is set and wins (the AGENT_FLEET_ names are accepted until svc-runner 0.16.0)',
  ]);
  const none = await install({ SVC_RUNNER_DIR: join(dir, 'plain-bin') });
  assert.is(none.status, 0, none.stderr);
  assert.equal(warnings(none.stderr), [], 'no warning without a legacy name');
});

test('from runner version 0.16.0 on the installer has no legacy names', () => {
  assert.match(installScript('https://svc.example.com', '0.15.0'), /AGENT_FLEET_RUNNER_DIR/);
  assert.not.match(installScript('https://svc.example.com', '0.16.0'), /AGENT_FLEET_/);
});

test("docs/runner.md's legacy table is exactly the table in protocol/legacy-env.ts; docs/operations.md names every legacy name", () => {
  const runner = readFileSync(join(ROOT, 'docs', 'runner.md'), 'utf8');
  const section = runner.slice(runner.indexOf('## Legacy environment names'));
  const rows = [...section.slice(0, section.indexOf('\n## ')).matchAll(/^\| `(SVC_[A-Z_]+)` \| `([A-Z_]+)` \|/gm)].map((m) => [m[1], m[2]]);
  assert.equal(rows, USER_ENV.map((v) => [v.name, legacyEnvName(v.name)]));
  const ops = readFileSync(join(ROOT, 'docs', 'operations.md'), 'utf8');
  for (const v of USER_ENV) assert.ok(ops.includes(`\`${legacyEnvName(v.name)}\``), `docs/operations.md names ${legacyEnvName(v.name)}`);
});

test('every SVC_ variable the docs mention is in the table (and documented where the table says) or a named exception', () => {
  const docs = [join(ROOT, 'README.md'), ...readdirSync(join(ROOT, 'docs')).filter((n) => n.endsWith('.md')).map((n) => join(ROOT, 'docs', n))];
  for (const skill of readdirSync(join(ROOT, 'skills'))) docs.push(join(ROOT, 'skills', skill, 'SKILL.md'));
  const mentioned = new Set(docs.flatMap((p) => [...readFileSync(p, 'utf8').matchAll(/\bSVC_[A-Z][A-Z_]*[A-Z]\b/g)].map((m) => m[0])));
  const table = new Set(USER_ENV.map((v) => v.name as string));
  for (const name of mentioned) assert.ok(table.has(name) || name in EXCEPTIONS, `${name} is mentioned in the docs: add it to protocol/legacy-env.ts or to the exceptions here`);
  for (const v of USER_ENV) {
    assert.ok(mentioned.has(v.name), `${v.name} is documented`);
    assert.ok(readFileSync(join(ROOT, v.doc), 'utf8').includes(v.name), `${v.name} is in ${v.doc}`);
    assert.not.ok(v.name in EXCEPTIONS, `${v.name} is not both`);
  }
});

test("the server's settings have no SVC_ prefix, so none needs a legacy name", () => {
  assert.equal(CONFIG_KEYS.filter((k) => k.startsWith('SVC_') || k.startsWith('AGENT_FLEET_')), []);
});

test.run();

// Legacy environment names through the real runner bundle (spec: Versioning; protocol/legacy-env.ts):
// every AGENT_FLEET_<rest> of the table takes effect as SVC_<rest>, the svc name wins when both are
// set, each legacy name in use logs exactly one WARN naming its svc name, and the processes the runner
// starts (tmux sessions, agents) see only the svc names. Unit checks of the table itself at the end.
// needs: tmux
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { USER_ENV, adoptLegacyEnv, deprecationWarning, legacyEnvName } from '../../protocol/legacy-env.ts';
import { agentRuns, fleet } from './_fleet.ts';
import type { Fleet } from './_fleet.ts';
import { runCli, waitUntil } from './_harness.ts';

let f: Fleet;
test.before.each(async () => {
  f = await fleet('legacy');
});
test.after.each(async () => {
  await f.cleanup();
});

const eventsFile = () => join(f.root, '.svc', 'events.jsonl');
const lines = () => (existsSync(eventsFile()) ? readFileSync(eventsFile(), 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l)) : []);
/** The WARN lines about legacy names: `<time> warn <message> <fields>`. */
const warnings = (stderr: string) =>
  stderr
    .split('\n')
    .filter((l) => / warn AGENT_FLEET_/.test(l))
    .map((l) => {
      const m = /^\d{4}-\d\d-\d\dT[\d:.]+Z warn (.*?) (\{.*\})$/.exec(l);
      assert.ok(m, `a log line: ${l}`);
      return { message: m![1], fields: JSON.parse(m![2]) };
    });

test('emit: AGENT_FLEET_PROJECT_ROOT, _SLOT and _ISSUE take effect; one WARN each, naming the svc name', async () => {
  const r = await runCli(f.sb, ['emit', 'round.note', '--data', '{"n":1}'], { AGENT_FLEET_PROJECT_ROOT: f.root, AGENT_FLEET_SLOT: 'a', AGENT_FLEET_ISSUE: '12' });
  assert.is(r.status, 0, r.stderr);
  assert.equal(
    lines().map((l) => [l.type, l.slot, l.issue]),
    [['round.note', 'a', 12]],
    'the line went to the legacy project root, with the legacy slot and issue',
  );
  const w = warnings(r.stderr);
  assert.equal(
    w.map((x) => x.fields),
    [
      { legacy: 'AGENT_FLEET_PROJECT_ROOT', name: 'SVC_PROJECT_ROOT' },
      { legacy: 'AGENT_FLEET_SLOT', name: 'SVC_SLOT' },
      { legacy: 'AGENT_FLEET_ISSUE', name: 'SVC_ISSUE' },
    ],
  );
  assert.is(w[1].message, 'AGENT_FLEET_SLOT is deprecated: use SVC_SLOT (the AGENT_FLEET_ names are accepted until svc-runner 0.16.0)');
});

test('the svc name wins when both are set; the legacy one is still warned about, once', async () => {
  const r = await runCli(f.sb, ['emit', 'round.note'], { SVC_PROJECT_ROOT: f.root, SVC_SLOT: 'b', AGENT_FLEET_SLOT: 'a', AGENT_FLEET_PROJECT_ROOT: join(f.sb.dir, 'elsewhere') });
  assert.is(r.status, 0, r.stderr);
  assert.equal(lines().map((l) => l.slot), ['b']);
  assert.not.ok(existsSync(join(f.sb.dir, 'elsewhere')), 'the legacy root was not used');
  const w = warnings(r.stderr);
  assert.is(w.length, 2, r.stderr);
  assert.is(w.find((x) => x.fields.legacy === 'AGENT_FLEET_SLOT')!.message, 'AGENT_FLEET_SLOT is deprecated and ignored: SVC_SLOT is set and wins (the AGENT_FLEET_ names are accepted until svc-runner 0.16.0)');
});

test('AGENT_FLEET_LOG=debug turns debug lines on like SVC_LOG=debug; without it there are none', async () => {
  const on = await runCli(f.sb, ['emit', 'round.note', '--project-root', f.root], { AGENT_FLEET_LOG: 'debug' });
  assert.is(on.status, 0, on.stderr);
  assert.match(on.stderr, / debug svc-runner \S+ \S+: emit /);
  assert.equal(warnings(on.stderr).map((x) => x.fields.legacy), ['AGENT_FLEET_LOG']);
  const off = await runCli(f.sb, ['emit', 'round.note', '--project-root', f.root]);
  assert.not.match(off.stderr, / debug /);
  assert.not.match(off.stderr, /AGENT_FLEET_/);
});

test('slot-start: AGENT_FLEET_TMUX_SOCKET and AGENT_FLEET_PROJECT_ID reach the right tmux server and project; the agent sees only svc names', async () => {
  await f.start();
  const { SVC_TMUX_SOCKET: socket, ...env } = f.env;
  const r = await runCli(f.sb, ['slot-start', 'a', '--issue', '3'], { ...env, AGENT_FLEET_TMUX_SOCKET: socket, AGENT_FLEET_PROJECT_ROOT: f.root, AGENT_FLEET_PROJECT_ID: 'p1' });
  assert.is(r.status, 0, r.stderr);
  assert.is(JSON.parse(r.stdout).session, 'svc-p1-slot-a');
  assert.equal(f.sessions(), ['svc-p1-slot-a'], "the session is on the test's own tmux server");
  assert.equal(warnings(r.stderr).map((x) => x.fields.name).sort(), ['SVC_PROJECT_ID', 'SVC_PROJECT_ROOT', 'SVC_TMUX_SOCKET']);
  await waitUntil(() => agentRuns(f.agentDir).length === 1, 5000, 'the worker to start');
  const [run] = agentRuns(f.agentDir);
  assert.is(run.env.SVC_TMUX_SOCKET, socket);
  assert.is(run.env.SVC_PROJECT_ID, 'p1');
  assert.equal(Object.keys(run.env).filter((k) => k.startsWith('AGENT_FLEET_')), [], 'no legacy name is passed on');
});

test('the table: svc names only, the legacy prefix, taken over in place, nothing from 0.16.0 on', () => {
  for (const v of USER_ENV) {
    assert.match(v.name, /^SVC_[A-Z_]+$/);
    assert.is(legacyEnvName(v.name), `AGENT_FLEET_${v.name.slice(4)}`);
  }
  const env: Record<string, string | undefined> = { AGENT_FLEET_LOG: 'debug', AGENT_FLEET_SLOT: 'a', SVC_SLOT: 'b', AGENT_FLEET_ISSUE: '', AGENT_FLEET_RUNNER_DIR: '/x', AGENT_FLEET_RUN_SECOND_MS: '5' };
  const uses = adoptLegacyEnv(env, 'runner', '0.15.9');
  assert.equal(uses, [
    { legacy: 'AGENT_FLEET_LOG', name: 'SVC_LOG', used: true },
    { legacy: 'AGENT_FLEET_SLOT', name: 'SVC_SLOT', used: false },
  ]);
  assert.equal(env, { SVC_LOG: 'debug', SVC_SLOT: 'b', AGENT_FLEET_ISSUE: '', AGENT_FLEET_RUNNER_DIR: '/x', AGENT_FLEET_RUN_SECOND_MS: '5' }, 'the installer name and test switches are left alone');
  const later = { AGENT_FLEET_LOG: 'debug' };
  assert.equal(adoptLegacyEnv(later, 'runner', '0.16.0'), []);
  assert.equal(later, { AGENT_FLEET_LOG: 'debug' }, 'from 0.16.0 on a legacy name is just an unknown variable');
  assert.match(deprecationWarning(uses[0]), /^AGENT_FLEET_LOG is deprecated: use SVC_LOG /);
});

test.run();

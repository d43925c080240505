// Shared setup for the skill run and catalog tests: the fleet sandbox (real git project, own tmux
// socket, fake server, daemon) with headless fakes of `claude -p` and `codex exec --json`
// (fixtures/fake-headless.mjs) and the fake's skills installed in ~/.claude/skills and ~/.codex/skills.
// needs: tmux
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fleet } from './_fleet.ts';
import type { Fleet } from './_fleet.ts';
import { waitUntil } from './_harness.ts';

export const FAKE_HEADLESS = resolve(import.meta.dirname, 'fixtures', 'fake-headless.mjs');
export const SKILLS = ['echo', 'slow', 'hang', 'stubborn', 'fail', 'edit', 'big', 'quick'];

export interface SkillFleet extends Fleet {
  /** The run directory of a run id. */
  runDir: (runId: string) => string;
  readRunFile: (runId: string, name: string) => any;
  /** skill_run.state events of a run, in arrival order (first arrival of each id). */
  states: (runId: string) => string[];
  finalEvent: (runId: string) => any;
  waitState: (runId: string, state: string, timeoutMs?: number) => Promise<any>;
  /** What the fake agent recorded for each start. */
  agentStarts: () => any[];
}

export async function skillFleet(name: string): Promise<SkillFleet> {
  const f = await fleet(name);
  f.sb.fakeBin('claude', `exec node '${FAKE_HEADLESS}' claude "$@"`);
  f.sb.fakeBin('codex', `exec node '${FAKE_HEADLESS}' codex "$@"`);
  for (const base of [join(f.sb.home, '.claude', 'skills'), join(f.sb.home, '.codex', 'skills')]) {
    for (const skill of SKILLS) {
      mkdirSync(join(base, skill), { recursive: true });
      writeFileSync(join(base, skill, 'SKILL.md'), `---\nname: ${skill}\ndescription: The fake's ${skill} behaviour.\n---\nDo ${skill}.\n`);
    }
  }
  writeFileSync(join(f.root, 'README.md'), '# repo\n');
  f.git(f.root, 'add', '-A');
  f.git(f.root, 'commit', '-q', '-m', 'readme');
  const runDir = (runId: string) => join(f.sb.env.XDG_STATE_HOME, 'svc', 'runs', runId);
  const stateEvents = (runId: string) => {
    const seen = new Set<string>();
    return f.events('skill_run.state').filter((e) => e.payload.runId === runId && !seen.has(e.id) && seen.add(e.id));
  };
  const sf: SkillFleet = Object.assign(f, {
    runDir,
    readRunFile: (runId: string, file: string) => {
      const p = join(runDir(runId), file);
      return existsSync(p) ? (file.endsWith('.json') ? JSON.parse(readFileSync(p, 'utf8')) : readFileSync(p, 'utf8')) : null;
    },
    states: (runId: string) => stateEvents(runId).map((e) => e.payload.state),
    finalEvent: (runId: string) => stateEvents(runId).find((e) => e.payload.result),
    waitState: async (runId: string, state: string, timeoutMs = 15_000) => {
      await waitUntil(() => stateEvents(runId).some((e) => e.payload.state === state), timeoutMs, () => `run ${runId} to be ${state}; states ${JSON.stringify(stateEvents(runId).map((e) => e.payload.state))}\n${f.daemon?.output().slice(-3000)}`);
      return stateEvents(runId).find((e) => e.payload.state === state);
    },
    agentStarts: () =>
      existsSync(f.agentDir)
        ? readdirSync(f.agentDir)
            .filter((n) => /^run\.\d+\.json$/.test(n))
            .map((n) => JSON.parse(readFileSync(join(f.agentDir, n), 'utf8')))
        : [],
  });
  return sf;
}

export const PROFILES = (agentDir: string) => [
  { id: 'cc', runtime: 'claude', env: { FAKE_AGENT_DIR: agentDir }, args: [] },
  { id: 'cx', runtime: 'codex', env: { FAKE_AGENT_DIR: agentDir }, args: [] },
];

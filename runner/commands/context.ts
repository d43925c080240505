// What every command handler gets (the error value a handler fails with is in runner/errors.ts).
import { CODEHOST_CAPABILITY, CODEHOST_GITLAB_CAPABILITY, CODEHOST_TOKENS_CAPABILITY, POOL_CAPABILITY, PR_DESCRIBE_CAPABILITY, PROFILES_CAPABILITY, REPLAY_CAPABILITY, ROOTS_CAPABILITY } from '../../protocol/frames.ts';
import type { CodeHost } from '../codehost/poller.ts';
import type { ProjectEntry, RunnerConfig } from '../config.ts';
import type { Env } from '../paths.ts';
import type { SkillRuns } from '../runs/manager.ts';
import type { Terminals } from '../terminal.ts';
import type { Ingest } from '../usage/ingest.ts';

export interface CommandContext {
  config: RunnerConfig;
  /** The current watch list (welcome/projects frames), for confinement. */
  projects: () => readonly ProjectEntry[];
  env: Env;
  startedAt: number;
  /** Open terminals (terminal.attach); absent where no daemon connection relays them. */
  terminals?: Terminals;
  /** The transcript ingest (session.backfill); absent outside the daemon. */
  ingest?: Ingest;
  /** The daemon's code-host client and collectors; absent outside the daemon. */
  codehost?: CodeHost;
  /** The daemon's skill runs (skill.run, skill.cancel); absent outside the daemon. */
  runs?: SkillRuns;
}

/** Capabilities this runner announces: `terminal` unless `terminal.attach` is disabled; `codehost`:
 *  it reads `repo` in its watch list (protocol/frames.ts watchedProject) and polls the code host;
 *  `roots.check` unless `project.inspect` is disabled: the server may check project roots with it;
 *  `skills.pool` unless `skill.run` is disabled: it reports its capacity, takes a server-chosen `runId` and
 *  `pool: true` watch-list entries, so the server may send it pool runs; `pr.describe` unless disabled: the
 *  server may send it the cost block of a pull request's description. */
export function capabilities(config: RunnerConfig): string[] {
  const unless = (command: RunnerConfig['disabledCommands'][number], cap: string) => (config.disabledCommands.includes(command) ? [] : [cap]);
  return [...unless('terminal.attach', 'terminal'), CODEHOST_CAPABILITY, CODEHOST_TOKENS_CAPABILITY, CODEHOST_GITLAB_CAPABILITY, REPLAY_CAPABILITY, PROFILES_CAPABILITY, ...unless('project.inspect', ROOTS_CAPABILITY), ...unless('skill.run', POOL_CAPABILITY), ...unless('pr.describe', PR_DESCRIBE_CAPABILITY)];
}

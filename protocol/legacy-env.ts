// Legacy environment variable names (spec: Versioning). Every user-facing SVC_* variable — one the
// docs tell a person (or an agent's skill) to set — is also accepted under the former product prefix,
// AGENT_FLEET_<rest> (the environment twin of the webhooks' legacy `X-Agent-Fleet-` headers), until
// runner version 0.16.0. The svc name wins when both are set; each legacy name in use gets ONE
// deprecation warning naming its svc name. This table is the only list: the runner applies it to its
// environment at start (runner/legacy-env.ts), the server's installer script takes its entries from it
// (functions/runners/install.ts), and docs/runner.md lists the same names (test/config/legacy-env.test.ts).
//
// Not in the table, on purpose: switches for tests and benchmarks (SVC_TEST_DB, SVC_PANES_POLL_MS,
// SVC_EVENTS_POLL_MS, SVC_RUNS_POLL_MS, SVC_RUN_SECOND_MS, SVC_RUNNER_SERVICE_PLATFORM); variables the
// runner only SETS for the agents it starts and never reads back (SVC_ROLE, SVC_RUN_ID, SVC_SKILL); and
// the names in the docs' example receivers (SVC_TRIGGER_SECRET, …), which are the reader's own code.
// The server's own settings have no SVC_ prefix (README, Configuration), so none of them has a legacy name.
import { LEGACY_UNTIL, legacyNamesLive } from './version.ts';

export const LEGACY_ENV_PREFIX = 'AGENT_FLEET_';

export interface UserEnvVar {
  /** The svc name. */
  name: `SVC_${string}`;
  /** Who reads it: the runner program, or the installer script the server serves. */
  readBy: 'runner' | 'installer';
  /** Where it is documented for users. */
  doc: string;
}

export const USER_ENV: readonly UserEnvVar[] = [
  { name: 'SVC_LOG', readBy: 'runner', doc: 'docs/runner.md' },
  { name: 'SVC_TMUX_SOCKET', readBy: 'runner', doc: 'docs/orchestrator.md' },
  { name: 'SVC_PROJECT_ID', readBy: 'runner', doc: 'docs/orchestrator.md' },
  { name: 'SVC_PROJECT_ROOT', readBy: 'runner', doc: 'docs/orchestrator.md' },
  { name: 'SVC_SLOT', readBy: 'runner', doc: 'docs/orchestrator.md' },
  { name: 'SVC_ISSUE', readBy: 'runner', doc: 'docs/orchestrator.md' },
  { name: 'SVC_RUNNER_DIR', readBy: 'installer', doc: 'docs/runner.md' },
];

/** `SVC_LOG` → `AGENT_FLEET_LOG`. */
export const legacyEnvName = (name: string): string => LEGACY_ENV_PREFIX + name.replace(/^SVC_/, '');

export interface LegacyUse {
  legacy: string;
  name: string;
  /** false when the svc name was set too: then the legacy value is ignored. */
  used: boolean;
}

/**
 * Take each legacy name that is set (non-empty) over to its svc name unless that one is set, and
 * remove the legacy name, so that the processes started from this environment see only svc names.
 * Changes `env` in place; returns what it found, one entry per legacy name, for the warnings.
 * From LEGACY_UNTIL on it does nothing: the legacy names are then ordinary unknown variables.
 */
export function adoptLegacyEnv(env: Record<string, string | undefined>, readBy: UserEnvVar['readBy'], version?: string): LegacyUse[] {
  if (!legacyNamesLive(version)) return [];
  const uses: LegacyUse[] = [];
  for (const v of USER_ENV) {
    if (v.readBy !== readBy) continue;
    const legacy = legacyEnvName(v.name);
    const value = env[legacy];
    if (value === undefined || value === '') continue;
    const used = env[v.name] === undefined || env[v.name] === '';
    if (used) env[v.name] = value;
    delete env[legacy];
    uses.push({ legacy, name: v.name, used });
  }
  return uses;
}

/** The one deprecation warning for a legacy name in use. */
export function deprecationWarning(u: LegacyUse): string {
  const what = u.used ? `${u.legacy} is deprecated: use ${u.name}` : `${u.legacy} is deprecated and ignored: ${u.name} is set and wins`;
  return `${what} (the ${LEGACY_ENV_PREFIX} names are accepted until svc-runner ${LEGACY_UNTIL})`;
}

// The runner's side of the legacy environment names (protocol/legacy-env.ts): at start, before any
// command reads its environment, each AGENT_FLEET_<rest> in use becomes SVC_<rest> (unless that is
// set) and gets one WARN line naming the svc name. The environment is changed in place, so tmux
// sessions, skill runs and the agents' `svc-runner` calls inherit only the svc names.
import { adoptLegacyEnv, deprecationWarning } from '../protocol/legacy-env.ts';
import { log, setLogLevel } from './log.ts';
import type { Env } from './paths.ts';

export function applyLegacyEnv(env: Env, version?: string): void {
  const uses = adoptLegacyEnv(env as Record<string, string | undefined>, 'runner', version);
  // log.ts read SVC_LOG when it was loaded, before the legacy name was taken over.
  if (uses.some((u) => u.name === 'SVC_LOG' && u.used) && env.SVC_LOG === 'debug') setLogLevel('debug');
  for (const u of uses) log.warn(deprecationWarning(u), { legacy: u.legacy, name: u.name });
}

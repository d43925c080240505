// The agent runtimes a runner reported (docs/runner.md, "Agent runtimes reported"; issue 34) and what
// they say about whether a run can start there now:
//   store      the `profiles` frame replaces runners.profiles; a hello without the `profiles`
//              capability (an older runner) sets it to null — unknown, never "none"
//   readiness  offline → runner_offline; reported profiles and none usable for this run → no_profile;
//              unknown profiles never block (the runner cannot say; its answer will)
import type { ReportedProfile } from '../../protocol/frames.ts';
import { PROFILES_CAPABILITY } from '../../protocol/frames.ts';
import { sql } from '../lib/db/index.ts';
import type { Queryable } from '../lib/db/index.ts';
import { publish } from '../live/publish.ts';
import { onlineSql } from './presence.ts';

/** Store a runner's report; a live `runner` notice when it changed (the Runners page re-reads). */
export async function recordProfiles(q: Queryable, runnerId: string, profiles: ReportedProfile[]): Promise<void> {
  const [changed] = await q.query(sql`
    update runners set profiles = ${sql.json(profiles)}, profiles_reported_at = now()
     where id = ${runnerId} and profiles is distinct from ${sql.json(profiles)}::jsonb
    returning 1`);
  if (!changed) await q.query(sql`update runners set profiles_reported_at = now() where id = ${runnerId}`);
  else await publish(q, { type: 'runner', id: runnerId, online: true }, { runnerId });
}

/** After hello: a runner that does not report profiles (older) has unknown ones, not the last ones seen. */
export async function helloProfiles(q: Queryable, runnerId: string, capabilities: string[]): Promise<void> {
  if (capabilities.includes(PROFILES_CAPABILITY)) return;
  await q.query(sql`update runners set profiles = null, profiles_reported_at = null where id = ${runnerId} and profiles is not null`);
}

/** A reported list as stored (jsonb), or null when never reported. */
export function storedProfiles(v: unknown): ReportedProfile[] | null {
  return Array.isArray(v) ? (v as ReportedProfile[]) : null;
}

/** Whether the runner can run an agent at all: 'ready' (a signed-in profile), 'none', or 'unknown' (not reported). */
export function runtimeState(profiles: ReportedProfile[] | null): 'ready' | 'none' | 'unknown' {
  if (profiles === null) return 'unknown';
  return profiles.some((p) => p.authenticated) ? 'ready' : 'none';
}

export type Readiness = { ok: true; notes: string[] } | { ok: false; reason: 'runner_offline' | 'no_profile'; message: string };

/**
 * Could the project's runner start a run with this profile (null: the first usable one, as the runner
 * picks: the first configured profile whose CLI is found, launch.ts chooseProfile) right now?
 */
export async function runnerReadiness(q: Queryable, runnerId: string | null, profileId: string | null): Promise<Readiness> {
  if (!runnerId) return { ok: false, reason: 'runner_offline', message: 'the project has no runner' };
  const [r] = await q.query<{ name: string; online: boolean; profiles: unknown }>(sql`
    select r.name, ${onlineSql} as online, r.profiles from runners r where r.id = ${runnerId} and r.revoked_at is null`);
  if (!r) return { ok: false, reason: 'runner_offline', message: "the project's runner was revoked" };
  if (!r.online) return { ok: false, reason: 'runner_offline', message: `the runner ${r.name || runnerId} is offline` };
  const profiles = storedProfiles(r.profiles);
  if (profiles === null) return { ok: true, notes: ['the runner does not report its agent runtimes (it is older than this server): whether it can start an agent is not known'] };
  const usable = profiles.filter((p) => p.authenticated);
  if (profileId) {
    const p = profiles.find((x) => x.name === profileId);
    if (!p) return { ok: false, reason: 'no_profile', message: `the profile ${profileId} is not among the runner's agent runtimes (${profiles.map((x) => x.name).join(', ') || 'none'})` };
    if (!p.authenticated) return { ok: false, reason: 'no_profile', message: `the profile ${profileId} (${p.runtime}) is not signed in on the runner` };
    return { ok: true, notes: [] };
  }
  if (profiles.length === 0) return { ok: false, reason: 'no_profile', message: 'the runner has no agent runtime: no configured profile has its CLI (claude, codex) installed' };
  if (!profiles[0].authenticated) {
    const also = usable.length ? ` (name ${usable[0].name} as the profile to use it instead)` : '';
    return { ok: false, reason: 'no_profile', message: `the runner would use profile ${profiles[0].name} (${profiles[0].runtime}), which is not signed in${also}` };
  }
  return { ok: true, notes: [] };
}

// Runtime profiles (spec: Runtime profile; DESIGN §5): detection of the agent runtimes on this machine
// and whether each is authenticated. The facts (binary, API key variables, credential files) are each
// runtime's own: runner/runtimes/<name>/index.ts.
import { execFile } from 'node:child_process';
import { accessSync, constants, existsSync, statSync } from 'node:fs';
import { delimiter, isAbsolute, join } from 'node:path';
import { RUNTIME_NAMES } from './config.ts';
import { RUNTIMES } from './runtimes/index.ts';
import type { Profile, RuntimeName } from './config.ts';
import { homeDir } from './paths.ts';
import type { Env } from './paths.ts';

export { RUNTIMES };

function isExecutableFile(path: string): boolean {
  try {
    if (!statSync(path).isFile()) return false;
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** An executable by absolute path, or looked up on PATH like a shell would (no shell involved). */
export function findExecutable(name: string, env: Env = process.env): string | null {
  if (isAbsolute(name)) return isExecutableFile(name) ? name : null;
  if (name.includes('/')) return null; // relative paths depend on the cwd: refused
  for (const dir of (env.PATH ?? '').split(delimiter)) {
    if (!dir || !isAbsolute(dir)) continue;
    const candidate = join(dir, name);
    if (isExecutableFile(candidate)) return candidate;
  }
  return null;
}

/** The environment a profile's runtime sees: the process environment with the profile's on top. */
const profileEnv = (profile: Pick<Profile, 'env'>, env: Env): Env => ({ ...env, ...profile.env });

export function isAuthenticated(runtime: RuntimeName, profile: Pick<Profile, 'env'>, env: Env = process.env): boolean {
  const { auth } = RUNTIMES[runtime];
  const merged = profileEnv(profile, env);
  if (auth.apiKeyEnv.some((k) => merged[k])) return true;
  return auth.credentialFiles(merged).some((f) => existsSync(f)) || (auth.extra?.(merged) ?? false);
}

/** First line of `<binary> --version`, or null (5 s limit; never through a shell). */
export function binaryVersion(path: string, env: Env = process.env): Promise<string | null> {
  return new Promise((resolve) => {
    execFile(path, ['--version'], { timeout: 5000, env: env as NodeJS.ProcessEnv, maxBuffer: 64 * 1024 }, (err, stdout) => {
      const line = String(stdout ?? '').split('\n')[0].trim().slice(0, 200);
      resolve(err || !line ? null : line);
    });
  });
}

export interface ProfileReport {
  profile: Profile;
  binaryPath: string | null;
  version: string | null;
  authenticated: boolean;
}

export async function reportProfile(profile: Profile, env: Env = process.env): Promise<ProfileReport> {
  const merged = profileEnv(profile, env);
  const binaryPath = findExecutable(profile.binary ?? RUNTIMES[profile.runtime].binary, merged);
  return {
    profile,
    binaryPath,
    version: binaryPath ? await binaryVersion(binaryPath, merged) : null,
    authenticated: isAuthenticated(profile.runtime, profile, env),
  };
}

/** What detection proposes: one profile per runtime whose binary is found (a configured profile's
 *  `binary` first, then PATH). A configured profile of the same runtime lends its id, binary, env and
 *  args to the proposal, so `--write` keeps them. */
export async function detectProfiles(existing: Profile[], env: Env = process.env): Promise<ProfileReport[]> {
  const found: ProfileReport[] = [];
  for (const runtime of RUNTIME_NAMES) {
    const prior = existing.find((p) => p.runtime === runtime);
    const candidate: Profile = { id: prior?.id ?? runtime, runtime, ...(prior?.binary ? { binary: prior.binary } : {}), env: prior?.env ?? {}, args: prior?.args ?? [] };
    let report = await reportProfile(candidate, env);
    if (!report.binaryPath && candidate.binary) {
      const { binary: _, ...onPath } = candidate;
      report = await reportProfile(onPath, env);
    }
    if (report.binaryPath) found.push(report);
  }
  return found;
}

const SECRET_KEY = /KEY|TOKEN|SECRET|PASSWORD|CREDENTIAL|AUTH/i;

/** A report as printed: secret-looking env values are hidden. */
export function printable(r: ProfileReport): Record<string, unknown> {
  const env = Object.fromEntries(Object.entries(r.profile.env).map(([k, v]) => [k, SECRET_KEY.test(k) ? '[redacted]' : v]));
  return { ...r.profile, env, authenticated: r.authenticated, found: Boolean(r.binaryPath), binaryPath: r.binaryPath, version: r.version };
}

export const summaryLine = (r: ProfileReport): string =>
  `  ${r.profile.id} (${r.profile.runtime}): ${r.authenticated ? 'authenticated' : 'NOT authenticated'}, ${r.binaryPath ?? 'binary not found'}${r.version ? `, ${r.version}` : ''}`;

/**
 * What the runner reports to the server (frames.ts PROFILES_CAPABILITY): the configured profiles whose
 * binary is found on this machine, in runner.json's order (the order a run without a named profile
 * picks from, launch.ts chooseProfile), each with `authenticated`. Cheap (file checks only, no process
 * started), so it is re-read on a timer to notice an install or a sign-in.
 */
export function reportedProfiles(profiles: Profile[], env: Env = process.env): { name: string; runtime: RuntimeName; authenticated: boolean }[] {
  return profiles
    .filter((p) => findExecutable(p.binary ?? RUNTIMES[p.runtime].binary, profileEnv(p, env)) !== null)
    .map((p) => ({ name: p.id, runtime: p.runtime, authenticated: isAuthenticated(p.runtime, p, env) }));
}

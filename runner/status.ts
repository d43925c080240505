// `svc-runner status` (spec: Runner command line, Health checks): config path, paired or not and as
// which id, the server, number of profiles, spool state, whether the daemon runs and what its OTLP
// receiver does (listening on a port, disabled, failed with the reason), whether the server
// answers (GET <server>/health), whether it still accepts the token (GET <server>/runners/self). Exit 1
// when the server is unreachable, when the token is revoked or replaced, when the machine is not paired
// (there is no server to ask) or when runner.json is invalid.
import { ConfigError, isPaired, loadConfig } from './config.ts';
import { lockHolder } from './lock.ts';
import { describeCodeHost, readCodeHostState } from './codehost/state.ts';
import { DEFAULT_OTLP_PORT, describeOtlp, readOtlpState } from './otlp/state.ts';
import { configPath, lockPath, spoolDir } from './paths.ts';
import type { Env } from './paths.ts';
import { spoolCount } from './spool.ts';
import { describeIngest } from './usage/offsets.ts';

type Out = { write: (s: string) => unknown };

export async function reach(server: string): Promise<{ ok: boolean; detail: string }> {
  const started = Date.now();
  try {
    const res = await fetch(`${server}/health`, { signal: AbortSignal.timeout(5000), redirect: 'error' });
    const body = (await res.json().catch(() => null)) as { status?: unknown } | null;
    const ms = Date.now() - started;
    if (res.status === 200 && body?.status === 'ok') return { ok: true, detail: `reachable (${ms} ms)` };
    return { ok: false, detail: `unreachable (GET /health answered HTTP ${res.status})` };
  } catch (e) {
    const cause = (e as { cause?: { code?: string; message?: string } }).cause;
    return { ok: false, detail: `unreachable (${cause?.code ?? cause?.message ?? (e as Error).name})` };
  }
}

export async function status(env: Env, out: Out, err: Out): Promise<number> {
  const path = configPath(env);
  out.write(`config: ${path}\n`);
  let loaded;
  try {
    loaded = loadConfig(path);
  } catch (e) {
    if (!(e instanceof ConfigError)) throw e;
    err.write(`svc-runner: ${e.message}\n`);
    return 1;
  }
  const c = loaded.config;
  const waiting = spoolCount(spoolDir(env));
  const daemon = lockHolder(lockPath(env));
  out.write(`paired: ${isPaired(c) ? `yes, as runner ${c.runnerId}` : loaded.exists ? 'no' : 'no (no runner.json yet)'}\n`);
  out.write(`server: ${c.server ?? 'none'}\n`);
  out.write(`profiles: ${c.profiles.length}\n`);
  const poolOnly = c.projects.filter((p) => p.pool).length;
  out.write(`projects: ${c.projects.length}${poolOnly ? ` (${poolOnly} as a pool member only: skill runs)` : ''}\n`);
  out.write(`spool: ${waiting} event(s) waiting for the server (${spoolDir(env)})\n`);
  out.write(`daemon: ${daemon ? `running (pid ${daemon})` : 'not running'}\n`);
  out.write(`sessions: ${describeIngest(env, daemon, c)}\n`);
  out.write(`codehost: ${describeCodeHost(readCodeHostState(env), daemon, c.codehost.apiUrl)}\n`);
  out.write(`otlp: ${describeOtlp(readOtlpState(env), daemon, { enabled: c.otlp?.enabled ?? true, port: c.otlp?.http ?? DEFAULT_OTLP_PORT })}\n`);
  if (!isPaired(c) || !c.server) {
    out.write('reach: unknown (not paired)\n');
    return 1;
  }
  const r = await reach(c.server);
  out.write(`reach: ${r.detail}\n`);
  if (!r.ok) return 1;
  const t = await tokenAccepted(c.server, c.token!);
  out.write(`token: ${t.detail}\n`);
  return t.ok ? 0 : 1;
}

/** Whether the server still accepts this runner's token (GET <server>/runners/self). */
export async function tokenAccepted(server: string, token: string): Promise<{ ok: boolean; detail: string }> {
  try {
    const res = await fetch(`${server}/runners/self`, { headers: { authorization: `Bearer ${token}` }, signal: AbortSignal.timeout(5000), redirect: 'error' });
    if (res.status === 200) return { ok: true, detail: 'accepted' };
    const code = ((await res.json().catch(() => null)) as { error?: { code?: unknown } } | null)?.error?.code;
    if (code === 'runner_revoked') return { ok: false, detail: 'revoked: pair again (svc-runner pair --server <url> --code <new code from the Runners page>)' };
    if (code === 'invalid_token') return { ok: false, detail: 'not accepted (replaced by a newer pairing, or unknown): pair again' };
    return { ok: false, detail: `unknown (GET /runners/self answered HTTP ${res.status})` };
  } catch (e) {
    return { ok: false, detail: `unknown (${(e as Error).name})` };
  }
}

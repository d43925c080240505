// `<state>/otlp.json`: what the daemon's OTLP receiver is doing, for `svc-runner status` (another
// process). Written by the daemon when the receiver starts, fails or is disabled; read only while that
// daemon (the lock holder, same pid) runs.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import * as z from 'zod';
import { writeFileAtomic } from '../config.ts';
import { stateDir } from '../paths.ts';
import type { Env } from '../paths.ts';

/** runner.json `otlp.http` when unset (spec: Runner local OTLP receiver). */
export const DEFAULT_OTLP_PORT = 4318;

export const otlpStatePath = (env: Env) => join(stateDir(env), 'otlp.json');

const otlpState = z.object({
  pid: z.number().int(),
  state: z.enum(['listening', 'disabled', 'failed']),
  port: z.number().int().nullable(),
  reason: z.string().max(500).nullable(),
  at: z.string(),
});
export type OtlpState = z.infer<typeof otlpState>;

export function writeOtlpState(env: Env, s: Omit<OtlpState, 'pid' | 'at'>): void {
  writeFileAtomic(otlpStatePath(env), JSON.stringify({ ...s, pid: process.pid, at: new Date().toISOString() }) + '\n');
}

export function readOtlpState(env: Env): OtlpState | null {
  try {
    const parsed = otlpState.safeParse(JSON.parse(readFileSync(otlpStatePath(env), 'utf8')));
    return parsed.success ? parsed.data : null;
  } catch {
    return null;
  }
}

/** The `otlp:` line of `status`. */
export function describeOtlp(s: OtlpState | null, daemonPid: number | null, configured: { enabled: boolean; port: number }): string {
  if (!configured.enabled) return 'disabled (otlp.enabled is false)';
  if (daemonPid === null) return `not running (the daemon is not running; it listens on 127.0.0.1:${configured.port} when started)`;
  if (!s || s.pid !== daemonPid) return 'unknown (the running daemon has not reported its receiver)';
  if (s.state === 'listening') return `listening on 127.0.0.1:${s.port}`;
  if (s.state === 'disabled') return 'disabled (otlp.enabled is false)';
  return `failed: ${s.reason ?? 'unknown error'}`;
}

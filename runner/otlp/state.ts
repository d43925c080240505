// `<state>/otlp.json`: what the daemon's OTLP receiver is doing, for `svc-runner status` (another
// process). Written by the daemon when the receiver starts, fails or is disabled; read only while that
// daemon (the lock holder, same pid) runs.
import * as z from 'zod';
import { daemonStateFile } from '../daemon-state.ts';

/** runner.json `otlp.http` when unset (spec: Runner local OTLP receiver). */
export const DEFAULT_OTLP_PORT = 4318;

const otlpState = z.object({
  pid: z.number().int(),
  state: z.enum(['listening', 'disabled', 'failed']),
  port: z.number().int().nullable(),
  reason: z.string().max(500).nullable(),
  at: z.string(),
});
export type OtlpState = z.infer<typeof otlpState>;

const file = daemonStateFile('otlp.json', otlpState);
export const writeOtlpState = file.write;
export const readOtlpState = file.read;

/** The `otlp:` line of `status`. */
export function describeOtlp(s: OtlpState | null, daemonPid: number | null, configured: { enabled: boolean; port: number }): string {
  if (!configured.enabled) return 'disabled (otlp.enabled is false)';
  if (daemonPid === null) return `not running (the daemon is not running; it listens on 127.0.0.1:${configured.port} when started)`;
  if (!s || s.pid !== daemonPid) return 'unknown (the running daemon has not reported its receiver)';
  if (s.state === 'listening') return `listening on 127.0.0.1:${s.port}`;
  if (s.state === 'disabled') return 'disabled (otlp.enabled is false)';
  return `failed: ${s.reason ?? 'unknown error'}`;
}

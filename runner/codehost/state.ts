// `<state>/codehost.json`: what the daemon's code-host client is doing (ok, rate limited until …, in
// failure backoff until …, no token), for `svc-runner status` (another process). Written by the daemon
// when the state changes and after polls; read only while that daemon (the lock holder, same pid) runs.
import * as z from 'zod';
import { daemonStateFile } from '../daemon-state.ts';

export const codehostState = z.object({
  pid: z.number().int(),
  state: z.enum(['idle', 'ok', 'rate_limited', 'backoff', 'no_token']),
  until: z.string().nullable(),
  remaining: z.number().nullable(),
  limit: z.number().nullable(),
  lastError: z.string().nullable(),
  requests: z.number(),
  notModified: z.number(),
  apiUrl: z.string(),
  tokenSource: z.string().nullable(),
  /** The repositories the server's App tokens are for, and when each expires (App mode; never a token). */
  appTokens: z.array(z.object({ repo: z.string(), expiresAt: z.string() })).default([]),
  lastPollAt: z.string().nullable(),
  projects: z.number(),
  at: z.string(),
});
export type CodeHostState = z.infer<typeof codehostState>;

const file = daemonStateFile('codehost.json', codehostState);
export const writeCodeHostState = file.write;
export const readCodeHostState = file.read;

/** The `codehost:` line of `status`. */
export function describeCodeHost(s: CodeHostState | null, daemonPid: number | null, apiUrl: string): string {
  if (daemonPid === null) return `not running (the daemon polls ${apiUrl} when started)`;
  if (!s || s.pid !== daemonPid) return 'unknown (the running daemon has not reported its code-host client)';
  const limit = s.remaining !== null && s.limit !== null ? `, ${s.remaining}/${s.limit} requests left` : '';
  const polls = `${s.requests} requests (${s.notModified} not modified)`;
  switch (s.state) {
    case 'idle':
      return s.projects ? `idle (${s.apiUrl}; no poll yet)` : `idle (no project with a repo on the watch list)`;
    case 'ok':
      return `ok (${s.apiUrl}, token from ${s.tokenSource ?? 'unknown'}${s.appTokens.length ? `, the App's for ${s.appTokens.map((t) => t.repo).join(', ')}` : ''}${limit}; ${polls}; last poll ${s.lastPollAt ?? 'none'})`;
    case 'rate_limited':
      return `rate limited: no requests until ${s.until} (${s.apiUrl}; ${polls})`;
    case 'backoff':
      return `failing, backing off until ${s.until}: ${s.lastError ?? 'unknown error'}`;
    case 'no_token':
      return `no token: ${s.lastError ?? 'set GH_TOKEN in a profile or the environment, or run gh auth login'}`;
  }
}

// `svc-runner pair --server <api-origin> --code <XXXX-XXXX> [--tags a,b] [--no-detect]` (spec: Runner pairing,
// Runner command line): trade the one-time code for the runner id and token at POST
// <server>/runners/pair and write them to runner.json, keeping the profiles and the rest of the file.
// Pairing again replaces the previous pairing (and forgets the watch list of the old runner id). When
// the file has no profiles, detection proposes them and they are written too (unless --no-detect).
// The token is never printed. `--tags` are sent with the request and stored on the server (runner pools:
// a pool target's targetTags must all be among them); the runner itself keeps no copy.
import { hostname } from 'node:os';
import { MAX_RUNNER_TAGS, PAIRING_CODE, pairRequest, pairResponse, runnerTag } from '../protocol/frames.ts';
import { VERSION } from '../protocol/version.ts';
import { ConfigError, loadConfig, saveConfig } from './config.ts';
import type { LoadedConfig } from './config.ts';
import { target } from './host.ts';
import { configPath } from './paths.ts';
import type { Env } from './paths.ts';
import { detectProfiles, summaryLine } from './profiles.ts';
import { mkdirSync, accessSync, constants } from 'node:fs';
import { dirname } from 'node:path';

type Out = { write: (s: string) => unknown };

/** Normalized code (letters upper-cased, spaces removed) or null when it is not `XXXX-XXXX`. */
export function normalizeCode(code: string): string | null {
  const c = code.trim().toUpperCase();
  return PAIRING_CODE.test(c) ? c : null;
}

/** `--tags a,b`: comma-separated runner tags (protocol/frames.ts runnerTag), duplicates dropped; `""` clears them. */
export function parseTags(text: string): { tags: string[] } | { error: string } {
  const tags = [...new Set(text.split(',').map((t) => t.trim()).filter(Boolean))];
  for (const t of tags) {
    const checked = runnerTag.safeParse(t);
    if (!checked.success) return { error: `tag ${JSON.stringify(t)} ${checked.error.issues[0]!.message}` };
  }
  if (tags.length > MAX_RUNNER_TAGS) return { error: `at most ${MAX_RUNNER_TAGS} tags (got ${tags.length})` };
  return { tags };
}

async function serverError(res: Response): Promise<string> {
  const text = await res.text().catch(() => '');
  try {
    const body = JSON.parse(text) as { error?: { code?: unknown; message?: unknown } };
    if (body.error && typeof body.error.message === 'string') {
      return `${body.error.message}${typeof body.error.code === 'string' ? ` (${body.error.code})` : ''}`;
    }
  } catch {}
  return `HTTP ${res.status}${text && text.length < 200 && !/[<{]/.test(text) ? `: ${text.trim()}` : ''}`;
}

/** Exit code per spec: 1 on a pairing error, 0 when paired. Arguments were validated by the caller. */
export async function pair(server: string, code: string, detect: boolean, env: Env, out: Out, err: Out, tags?: string[]): Promise<number> {
  const path = configPath(env);
  let loaded: LoadedConfig;
  try {
    loaded = loadConfig(path);
    mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
    accessSync(dirname(path), constants.W_OK); // find out now, before the single-use code is spent
  } catch (e) {
    err.write(`svc-runner: pairing not attempted: ${e instanceof ConfigError ? e.message : `cannot write ${path}: ${(e as Error).message}`}\n`);
    return 1;
  }
  const body = pairRequest.parse({ code, hostname: hostname().slice(0, 255), version: VERSION, target: target(), ...(tags ? { tags } : {}) });
  let res: Response;
  try {
    res = await fetch(`${server}/runners/pair`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json' },
      body: JSON.stringify(body),
      redirect: 'error',
      signal: AbortSignal.timeout(30_000),
    });
  } catch (e) {
    const cause = (e as { cause?: { code?: string; message?: string } }).cause;
    err.write(`svc-runner: pairing failed: cannot reach ${server} (${cause?.code ?? cause?.message ?? (e as Error).message})\n`);
    return 1;
  }
  if (res.status !== 200) {
    err.write(`svc-runner: pairing failed: ${await serverError(res)}\n`);
    return 1;
  }
  const parsed = pairResponse.safeParse(await res.json().catch(() => null));
  if (!parsed.success) {
    err.write(`svc-runner: pairing failed: the server's answer is not a pairing response (is ${server} the svc API origin?)\n`);
    return 1;
  }
  const raw = structuredClone(loaded.raw);
  if (raw.runnerId !== parsed.data.runnerId || raw.server !== server) delete raw.projects; // another runner's watch list
  Object.assign(raw, { server, runnerId: parsed.data.runnerId, token: parsed.data.token });
  raw.sessions = { ...((raw.sessions as object | undefined) ?? {}), ingestSince: new Date().toISOString() };
  let detected: Awaited<ReturnType<typeof detectProfiles>> | null = null;
  if (detect && loaded.config.profiles.length === 0) {
    detected = await detectProfiles([], env);
    raw.profiles = detected.map((d) => d.profile);
  }
  try {
    saveConfig(path, raw);
  } catch (e) {
    err.write(`svc-runner: paired as ${parsed.data.runnerId}, but ${path} could not be written: ${e instanceof Error ? e.message : String(e)}\nAsk an admin for a new code and pair again.\n`);
    return 1;
  }
  out.write(`Paired with ${server} as runner ${parsed.data.runnerId}${tags?.length ? ` (tags: ${tags.join(', ')})` : ''}.\nWrote ${path} (mode 0600; it holds the runner token).\n`);
  if (detected) {
    out.write(detected.length ? `Detected profiles:\n${detected.map(summaryLine).join('\n')}\n` : 'No agent runtime (claude, codex) found on PATH; add profiles later with: svc-runner profiles --detect --write\n');
  } else if (loaded.config.profiles.length) {
    out.write(`Kept ${loaded.config.profiles.length} configured profile(s).\n`);
  }
  out.write('Start the daemon with: svc-runner run   (or install it as a service: svc-runner install-service)\n');
  return 0;
}

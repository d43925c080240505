// Where transcripts are and reading them all (docs/cost.md). The incremental pieces — readClaudeFile and
// readCodexFile from a byte offset with dedup state that spans files and calls — are what the daemon's
// ingest builds on; scanAll is the one-shot read `svc-runner usage` does with the same pieces.
import { readdirSync, realpathSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { costUsd } from '../../protocol/prices.ts';
import type { ModelPrice } from '../../protocol/prices.ts';
import type { LlmRequest, SessionMeta } from '../../protocol/usage.ts';
import type { Profile } from '../config.ts';
import { homeDir } from '../paths.ts';
import type { Env } from '../paths.ts';
import { ClaudeDedup, fileContext, memoPrice, parseClaudeLine } from './claude.ts';
import type { ClaudeEntry } from './claude.ts';
import { codexEventKey, codexFileSession, newCodexFileState, parseCodexLine } from './codex.ts';
import type { CodexEvent, CodexFileState } from './codex.ts';
import { readLines, readLinesSync } from './lines.ts';

export interface UsageDirs {
  /** Claude config dirs (each has projects/). */
  claude: string[];
  /** Codex homes (each may have sessions/ and archived_sessions/). */
  codex: string[];
}

const list = (v: string | undefined) => (v ?? '').split(',').map((s) => s.trim()).filter(Boolean);

function expand(p: string, env: Env): string {
  if (p === '~') return homeDir(env);
  return p.startsWith('~/') ? join(homeDir(env), p.slice(2)) : p;
}

const isDir = (p: string) => {
  try {
    return statSync(p).isDirectory();
  } catch {
    return false;
  }
};

function uniqueDirs(paths: string[]): string[] {
  const seen = new Set<string>();
  const out: string[] = [];
  for (const p of paths) {
    let real: string;
    try {
      real = realpathSync(p);
    } catch {
      continue;
    }
    if (!seen.has(real)) (seen.add(real), out.push(p));
  }
  return out;
}

/**
 * Claude: CLAUDE_CONFIG_DIR (a comma-separated list; an entry may name projects/ itself) when set, else
 * $XDG_CONFIG_HOME/claude (~/.config/claude) and ~/.claude — as ccusage finds them — plus every profile's
 * env CLAUDE_CONFIG_DIR. Codex: CODEX_HOME (comma-separated, default ~/.codex) plus every profile's env
 * CODEX_HOME. Only existing directories are returned.
 */
export function usageDirs(env: Env, profiles: readonly Profile[] = []): UsageDirs {
  const claudeDir = (raw: string) => {
    const p = expand(raw, env);
    return p.replace(/\/+$/, '').endsWith('/projects') && isDir(p) ? p.replace(/\/+$/, '').slice(0, -'/projects'.length) || '/' : p;
  };
  const claude = env.CLAUDE_CONFIG_DIR !== undefined && list(env.CLAUDE_CONFIG_DIR).length
    ? list(env.CLAUDE_CONFIG_DIR).map(claudeDir)
    : [join(env.XDG_CONFIG_HOME && env.XDG_CONFIG_HOME.startsWith('/') ? env.XDG_CONFIG_HOME : join(homeDir(env), '.config'), 'claude'), join(homeDir(env), '.claude')];
  const codex = env.CODEX_HOME !== undefined && list(env.CODEX_HOME).length ? list(env.CODEX_HOME).map((p) => expand(p, env)) : [join(homeDir(env), '.codex')];
  for (const prof of profiles) {
    if (prof.runtime === 'claude' && prof.env.CLAUDE_CONFIG_DIR) claude.push(...list(prof.env.CLAUDE_CONFIG_DIR).map(claudeDir));
    if (prof.runtime === 'codex' && prof.env.CODEX_HOME) codex.push(...list(prof.env.CODEX_HOME).map((p) => expand(p, env)));
  }
  return { claude: uniqueDirs(claude.filter((d) => isDir(join(d, 'projects')))), codex: uniqueDirs(codex.filter(isDir)) };
}

function walk(dir: string, out: string[]): void {
  let entries;
  try {
    entries = readdirSync(dir, { withFileTypes: true });
  } catch {
    return;
  }
  for (const e of entries) {
    const p = join(dir, e.name);
    if (e.isFile() && e.name.endsWith('.jsonl')) out.push(p);
    else if (e.isDirectory()) walk(p, out);
  }
}

const byPath = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

/** Every transcript under the dirs' projects/, recursively (subagent files included), in ccusage's order. */
export function claudeFiles(dirs: readonly string[]): string[] {
  const out: string[] = [];
  for (const d of dirs) walk(join(d, 'projects'), out);
  return out.sort(byPath);
}

/** Rollouts under sessions/ and archived_sessions/; a relative path in both is read from sessions/ only. */
export function codexFiles(homes: readonly string[]): string[] {
  const out: string[] = [];
  for (const home of homes) {
    const live: string[] = [];
    const archived: string[] = [];
    walk(join(home, 'sessions'), live);
    walk(join(home, 'archived_sessions'), archived);
    const seen = new Set(live.map((f) => relative(join(home, 'sessions'), f)));
    out.push(...live.sort(byPath), ...archived.filter((f) => !seen.has(relative(join(home, 'archived_sessions'), f))).sort(byPath));
  }
  return out;
}

export interface ReadStats {
  lines: number;
  corrupt: number;
}

/** Sessions seen so far, keyed by runtime and session id. */
export class SessionTracker {
  readonly sessions = new Map<string, SessionMeta & { project: string }>();
  /** firstAt and lastAt in ms, so a touch inside the known span makes no date string. */
  private readonly span = new Map<string, { first: number; last: number }>();
  touch(runtime: 'claude' | 'codex', sessionId: string, project: string, ms: number, model: string | null, cwd: string | null, branch: string | null): void {
    const key = `${runtime}\u0000${sessionId}`;
    let s = this.sessions.get(key);
    let span = this.span.get(key);
    if (!s || !span) {
      const at = new Date(ms).toISOString();
      s = { runtime, sessionId, source: 'transcript', cwd: null, branch: null, models: [], firstAt: at, lastAt: at, project };
      this.sessions.set(key, s);
      this.span.set(key, (span = { first: ms, last: ms }));
    }
    if (ms < span.first) s.firstAt = new Date((span.first = ms)).toISOString();
    if (ms > span.last) s.lastAt = new Date((span.last = ms)).toISOString();
    if (cwd && !s.cwd) s.cwd = cwd;
    if (branch && !s.branch) s.branch = branch;
    if (model && !s.models.includes(model) && s.models.length < 64) s.models.push(model);
  }
}

export interface ReadOptions {
  /** Read with synchronous calls (a one-shot scan such as `svc-runner usage`; never the daemon). */
  sync?: boolean;
}

/** Reads one Claude transcript from `offset`; counted lines go through the shared dedup. */
export async function readClaudeFile(file: string, offset: number, dedup: ClaudeDedup, onResult?: (r: ReturnType<ClaudeDedup['add']>, e: ClaudeEntry) => void, opts: ReadOptions = {}): Promise<ReadStats & { offset: number; size: number }> {
  const ctx = fileContext(file);
  let corrupt = 0;
  const onLine = (line: Buffer, at: number) => {
    const v = parseClaudeLine(line, at, ctx);
    if ('corrupt' in v) corrupt++;
    else if ('entry' in v) {
      const res = dedup.add(v.entry);
      onResult?.(res, v.entry);
    }
  };
  const r = opts.sync ? readLinesSync(file, offset, onLine) : await readLines(file, offset, onLine);
  return { offset: r.offset, size: r.size, lines: r.lines, corrupt: corrupt + r.oversized };
}

/** Reads one Codex rollout from `offset` with the file's state (keep it with the offset between calls). */
export async function readCodexFile(file: string, offset: number, state: CodexFileState, onEvent: (e: CodexEvent) => void, opts: ReadOptions = {}): Promise<ReadStats & { offset: number; size: number }> {
  const fileSession = codexFileSession(file);
  let corrupt = 0;
  const onLine = (line: Buffer, at: number) => {
    const v = parseCodexLine(line, at, file, state, fileSession);
    if ('corrupt' in v) corrupt++;
    else if ('event' in v) onEvent(v.event);
  };
  const r = opts.sync ? readLinesSync(file, offset, onLine) : await readLines(file, offset, onLine);
  return { offset: r.offset, size: r.size, lines: r.lines, corrupt: corrupt + r.oversized };
}

/** The request record for a counted Claude line (protocol/usage.ts; key per its comment). */
export function claudeRequest(e: ClaudeEntry & { priceModel: string }): LlmRequest {
  const key = e.messageId !== null ? `claude:${e.messageId}:${e.requestId ?? ''}` : `claude:line:${e.sessionId}:${e.uuid ?? `${e.file}@${e.lineOffset}`}`;
  return {
    key: key.slice(0, 600),
    runtime: 'claude',
    source: 'transcript',
    sessionId: e.sessionId,
    requestId: e.requestId,
    messageId: e.messageId,
    model: e.priceModel,
    at: new Date(e.ms).toISOString(),
    inputTokens: e.inputTokens,
    outputTokens: e.outputTokens,
    cacheWrite5mTokens: e.cacheWrite5mTokens,
    cacheWrite1hTokens: e.cacheWrite1hTokens,
    cacheReadTokens: e.cacheReadTokens,
    speed: e.speed,
    sidechain: e.sidechain,
    reportedCostUsd: e.recordedCostUsd,
  };
}

/** The request record for a Codex token_count (ccusage's mapping: input − cached, cached as cache read). */
export function codexRequest(e: CodexEvent): LlmRequest {
  return {
    key: `codex:${e.sessionId}:${e.runningTotal}`.slice(0, 600),
    runtime: 'codex',
    source: 'transcript',
    sessionId: e.sessionId,
    requestId: null,
    messageId: null,
    model: e.model,
    at: new Date(e.ms).toISOString(),
    inputTokens: e.usage.input - e.usage.cached,
    outputTokens: e.usage.output,
    cacheWrite5mTokens: 0,
    cacheWrite1hTokens: 0,
    cacheReadTokens: e.usage.cached,
    reasoningTokens: e.usage.reasoning,
    speed: 'standard',
  };
}

/** A counted request with what the report needs beside the record. */
export interface ScannedRequest {
  request: LlmRequest;
  /** The model as ccusage reports it (`<model>-fast` for Claude fast mode). */
  reportModel: string;
  fallbackModel: boolean;
  /** Session report grouping: Claude's path session (subagents roll into their parent), Codex's session id. */
  session: string;
  ms: number;
}

export interface ScanResult {
  requests: ScannedRequest[];
  sessions: (SessionMeta & { project: string })[];
  files: number;
  corrupt: number;
}

/** Reads every transcript of the runtimes asked for, from the start (synchronously: a one-shot command). */
export async function scanAll(dirs: UsageDirs, prices: readonly ModelPrice[], runtimes: ReadonlySet<'claude' | 'codex'>): Promise<ScanResult> {
  const tracker = new SessionTracker();
  const requests: ScannedRequest[] = [];
  let files = 0, corrupt = 0;
  if (runtimes.has('claude')) {
    const dedup = new ClaudeDedup(prices);
    for (const f of claudeFiles(dirs.claude)) {
      files++;
      try {
        corrupt += (await readClaudeFile(f, 0, dedup, undefined, { sync: true })).corrupt;
      } catch {
        // Deleted or unreadable between listing and reading: nothing to count.
      }
    }
    for (const e of dedup.entries) {
      if (e.model === null || e.priceModel === null) continue; // <synthetic> or no model: not a request
      requests.push({ request: claudeRequest(e as ClaudeEntry & { priceModel: string }), reportModel: e.model, fallbackModel: false, session: e.sessionId, ms: e.ms });
      tracker.touch('claude', e.sessionId, e.cwd ?? e.projectDir, e.ms, e.priceModel, e.cwd, e.branch);
    }
  }
  if (runtimes.has('codex')) {
    const seen = new Set<string>();
    for (const f of codexFiles(dirs.codex)) {
      files++;
      const state = newCodexFileState();
      try {
        const r = await readCodexFile(f, 0, state, (e) => {
          const k = codexEventKey(e);
          if (seen.has(k)) return;
          seen.add(k);
          requests.push({ request: codexRequest(e), reportModel: e.model, fallbackModel: e.fallbackModel, session: e.sessionId, ms: e.ms });
          tracker.touch('codex', e.sessionId, state.cwd ?? e.sessionId, e.ms, e.model, state.cwd, state.branch);
        }, { sync: true });
        corrupt += r.corrupt;
      } catch {
        // as above
      }
    }
  }
  return { requests, sessions: [...tracker.sessions.values()], files, corrupt };
}

/** USD for a request at the table's price; null when the model has none. */
export function requestCost(r: LlmRequest, prices: readonly ModelPrice[]): number | null {
  const p = memoPrice(r.model, prices);
  return p ? costUsd(r, p, r.speed) : null;
}

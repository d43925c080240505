// runner.json (spec: Runner configuration file, Runtime profile): every key with its default and range,
// validated with zod. Read when a command starts; written atomically (temp file, fsync, rename) with
// mode 0600 because it holds the runner token. An invalid file is refused with an error that names the
// bad fields and never their values.
import { existsSync, readFileSync } from 'node:fs';
import { syncDir, writeFileAtomic } from '../protocol/atomic-file.ts';
import * as z from 'zod';
import { ConfigError } from './cli-options.ts';
import { COMMAND_NAMES } from '../protocol/command-names.ts';
import { skillSource } from '../protocol/skill-source.ts';
import { RUNTIMES } from '../protocol/usage.ts';
import type { Runtime } from '../protocol/usage.ts';
import { gitlabHost } from '../protocol/frames.ts';

/** Agent runtimes a profile may launch (DESIGN §5; runner/runtimes/index.ts). */
export const RUNTIME_NAMES = RUNTIMES;
export type RuntimeName = Runtime;

const int = (min: number, max: number, dflt: number) => z.number().int().min(min).max(max).default(dflt);

export const profileSchema = z.strictObject({
  id: z.string().regex(/^[A-Za-z0-9_-]{1,64}$/, { message: 'must be 1-64 letters, digits, _ or -' }),
  runtime: z.enum(RUNTIME_NAMES),
  binary: z.string().min(1).max(4096).optional(),
  env: z.record(z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, { message: 'must be an environment variable name' }), z.string()),
  args: z.array(z.string()),
});
export type Profile = z.infer<typeof profileSchema>;

export const projectEntry = z.strictObject({
  id: z.string().min(1).max(128),
  root: z.string().min(1).max(4096),
  /** owner/name on the code host (sent by servers that know this runner reads it). */
  repo: z.string().regex(/^[A-Za-z0-9_.-]{1,100}\/[A-Za-z0-9_.-]{1,100}$/, { message: 'must be owner/name' }).optional(),
  /** A GitLab project (protocol/frames.ts gitlabHost): polled through the GitLab adapter instead of `repo`. */
  host: gitlabHost.optional(),
  /** A project this runner serves only as a pool member (protocol/frames.ts watchedProject): skill runs there, nothing else. */
  pool: z.literal(true).optional(),
});
export type ProjectEntry = z.infer<typeof projectEntry>;

/**
 * The watch list without its pool-only entries: what the orchestrator, slots, terminal, `.svc/events.jsonl`
 * tailing, pane watching and code-host polling serve. A pool member's clone runs skill runs only; the
 * project's orchestrator and its code-host collector live on its primary runner (docs/runner.md "Runner pools").
 */
export const primaryProjects = <P extends { pool?: true }>(projects: readonly P[]): P[] => projects.filter((p) => !p.pool);

/** `--server`: http(s)://host[:port][/path], no credentials, query or fragment (spec: Runner command line). */
export function parseServer(text: string): { url: string } | { error: string } {
  if (/[?#]/.test(text)) return { error: 'must not have a query or fragment' };
  let u: URL;
  try {
    u = new URL(text);
  } catch {
    return { error: 'must be a URL like https://svc.example.com' };
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') return { error: 'must start with http:// or https://' };
  if (u.username || u.password || text.slice(0, text.indexOf(u.host)).includes('@')) return { error: 'must not contain credentials' };
  if (!u.hostname) return { error: 'must name a host' };
  return { url: `${u.protocol}//${u.host}${u.pathname.replace(/\/+$/, '')}` };
}

/** A skill catalog (docs/skill-runs.md, Catalog): a git repository searched for SKILL.md files, or a
 *  JSON index file (absolute path or https:// URL). */
export const catalogEntry = z.union([
  z.strictObject({ git: skillSource.shape.repo, ref: skillSource.shape.ref }),
  z.strictObject({
    index: z
      .string()
      .max(4096)
      .refine((p) => (p.startsWith('/') && !p.split('/').includes('..')) || /^https:\/\/[^\s]+$/.test(p), { message: 'must be an absolute path or an https:// URL' }),
  }),
]);
export type CatalogEntry = z.infer<typeof catalogEntry>;

const serverSchema = z.string().refine((s) => 'url' in parseServer(s), { message: 'must be http(s)://host[:port][/path] without credentials, query or fragment' });

export const configSchema = z.strictObject({
  server: serverSchema.optional(),
  runnerId: z.string().regex(/^[A-Za-z0-9_.:-]{1,128}$/, { message: 'must be a runner id' }).optional(),
  token: z.string().regex(/^[\x21-\x7e]{1,1024}$/, { message: 'must be a token of printable characters' }).optional(),
  profiles: z.array(profileSchema).default([]),
  projects: z.array(projectEntry).default([]),
  disabledCommands: z.array(z.enum(COMMAND_NAMES)).default([]),
  otlp: z
    .strictObject({
      enabled: z.boolean().default(true),
      http: int(1, 65535, 4318),
      grpc: z.null().default(null),
      codexExperimental: z.boolean().default(false),
    })
    .nullable()
    .default(null),
  fleet: z
    .strictObject({ pollSeconds: int(5, 3600, 15), prPollSeconds: int(15, 3600, 60), eventsPollSeconds: int(1, 3600, 5) })
    .prefault({}),
  queue: z.strictObject({ pollSeconds: int(15, 3600, 60) }).prefault({}),
  /** The code host's REST API (docs/runner.md, Code host): GitHub, GitHub Enterprise (https://<host>/api/v3). */
  codehost: z
    .strictObject({
      apiUrl: z
        .string()
        .max(2048)
        .refine((u) => /^https?:\/\/[^\s/?#@]+(\/[^\s?#]*)?$/.test(u), { message: 'must be an http(s) URL without credentials, query or fragment' })
        .default('https://api.github.com'),
    })
    .prefault({}),
  sessions: z.strictObject({ enabled: z.boolean().default(true), ingestSince: z.iso.datetime({ offset: true }).optional() }).prefault({}),
  skills: z
    .strictObject({ maxConcurrentRuns: int(1, 32, 2), maxTimeoutSec: int(60, 21600, 21600), spareWorktrees: int(0, 32, 2), catalog: z.array(catalogEntry).max(32).default([]) })
    .prefault({}),
});
export type RunnerConfig = z.infer<typeof configSchema>;

/** The file as read (`raw`, written back with only what changed) and its validated form. */
export interface LoadedConfig {
  path: string;
  exists: boolean;
  raw: Record<string, unknown>;
  config: RunnerConfig;
}

export { ConfigError };

/** One line per bad field: its dotted path and what is wrong, never the value found. */
export function describeIssues(issues: z.core.$ZodIssue[]): string[] {
  return issues.flatMap((i) => {
    const at = i.path.map(String).join('.');
    if (i.code === 'unrecognized_keys') return i.keys.map((k) => `${at ? at + '.' : ''}${k}: unknown key`);
    const what =
      i.code === 'invalid_type' ? `must be ${i.expected}`
      : i.code === 'too_small' || i.code === 'too_big' ? i.message.replace(/^Too (small|big): expected \w+ to (be|have) /, 'must be ')
      : i.code === 'invalid_value' ? `must be one of ${i.values.map((v) => JSON.stringify(v)).join(', ')}`
      : i.message.replace(/^Invalid string: must match pattern .*/, 'has the wrong format');
    return [`${at || '(file)'}: ${what}`];
  });
}

export function validateConfig(path: string, raw: unknown): RunnerConfig {
  const parsed = configSchema.safeParse(raw);
  if (!parsed.success) throw new ConfigError(path, describeIssues(parsed.error.issues));
  return parsed.data;
}

/** Read and validate runner.json; a missing file is the empty config. Throws ConfigError. */
export function loadConfig(path: string): LoadedConfig {
  if (!existsSync(path)) return { path, exists: false, raw: {}, config: validateConfig(path, {}) };
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new ConfigError(path, [`cannot be read (${(err as NodeJS.ErrnoException).code ?? 'error'})`]);
  }
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (err) {
    // V8's message quotes the text around the error, which may be the token: give a position only.
    const pos = Number(/position (\d+)/.exec(String(err))?.[1] ?? NaN);
    const where = Number.isFinite(pos) ? ` (line ${text.slice(0, pos).split('\n').length})` : '';
    throw new ConfigError(path, [`is not valid JSON${where}`]);
  }
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) throw new ConfigError(path, ['(file): must be a JSON object']);
  return { path, exists: true, raw: raw as Record<string, unknown>, config: validateConfig(path, raw) };
}

export const isPaired = (c: RunnerConfig): c is RunnerConfig & { server: string; runnerId: string; token: string } =>
  Boolean(c.server && c.runnerId && c.token);

// The atomic writer is shared with the server (the audit anchor file); runner modules import it from here.
export { syncDir, writeFileAtomic };

/** Validate the changed raw object and write it (only keys that were in the file or were set). */
export function saveConfig(path: string, raw: Record<string, unknown>): RunnerConfig {
  const config = validateConfig(path, raw);
  writeFileAtomic(path, JSON.stringify(raw, null, 2) + '\n');
  return config;
}

/** Re-read the file, apply a change, validate and write it back. */
export function updateConfig(path: string, change: (raw: Record<string, unknown>) => void): RunnerConfig {
  const { raw } = loadConfig(path);
  const next = structuredClone(raw);
  change(next);
  return saveConfig(path, next);
}

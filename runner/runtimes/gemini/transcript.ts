// Gemini CLI chat files → per-request records (reference agent-formats-more.md §1; docs/cost.md "Gemini CLI").
//
// Where: every `*.jsonl` and `*.json` below each root, recursively, as ccusage reads them. A root is a
// GEMINI_DATA_DIR entry (a comma-separated list, the runner's env and each gemini profile's), else
// `$GEMINI_CLI_HOME/.gemini/tmp` (GEMINI_CLI_HOME replaces $HOME for everything under ~/.gemini).
// Below a root: `<project>/chats/session-<time>-<id8>.jsonl`, sub-agents `chats/<parent>/<id>.jsonl`,
// before v0.39 `….json` documents `{sessionId, projectHash, startTime, lastUpdated, messages:[…]}`.
//
// A .jsonl line is a metadata line `{sessionId, projectHash, startTime, …}`, a message `{id, timestamp,
// type, content, model?, tokens?, …}` (re-appended each time it changes: the last line with an id wins),
// `{"$set": {…}}` (a `messages` array in it is a checkpoint: its messages are read like lines), or
// `{"$rewindTo": id}`. A rewound message was sent to the model and paid for: it still counts (ccusage too).
// Only `type:"gemini"` messages with `tokens` are requests; a message without `model` takes the last one seen.
//
// Across files: a resumed legacy .json leaves its messages in place and copies them into a new .jsonl, so a
// (session id, message id) counts once over all files (ccusage dedups within a file only and counts the
// copy twice: docs/cost.md). The first file in path order holds the counted copy.
//
// Tokens (TokensSummary = the API's usageMetadata): input = promptTokenCount (includes cached), output =
// candidatesTokenCount (excludes thoughts), cached, thoughts (billed as output), tool (prompt tokens of tool
// use), total. As ccusage: uncached input = input − cached (when total shows input includes cached) + tool;
// cache read = cached; no cache write. Unlike ccusage's outputTokens, ours includes thoughts (svc's
// outputTokens always includes reasoning; reasoningTokens says how much); the cost is the same.
//
// cwd: `<root>/<slug>/.project_root` (v0.29+), else `projects.json` beside the root (`{projects:{path:slug}}`),
// else, for a SHA-256 project dir or projectHash, the projects.json path whose hash it is.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, sep } from 'node:path';
import type { LlmRequest } from '../../../protocol/usage.ts';
import { envList, expandHome, homeDir, isDir, uniqueDirs } from '../../paths.ts';
import type { Env } from '../../paths.ts';
import { sha256Hex, stampOf } from '../../lazy-builtins.ts';
import { obj } from '../stream-util.ts';
import type { RecordRead } from '../types.ts';


function rootsOf(env: Env, fallback: Env): string[] {
  if (envList(env.GEMINI_DATA_DIR).length) return envList(env.GEMINI_DATA_DIR).map((p) => expandHome(p, fallback));
  const home = env.GEMINI_CLI_HOME ? expandHome(env.GEMINI_CLI_HOME, fallback) : homeDir(fallback);
  return [join(home, '.gemini', 'tmp')];
}

/** The roots of this machine's env and of each gemini profile's env (only existing dirs, once each). */
export function geminiRoots(env: Env, profileEnvs: readonly Env[]): string[] {
  const all = [...rootsOf(env, env), ...profileEnvs.flatMap((p) => (p.GEMINI_DATA_DIR || p.GEMINI_CLI_HOME ? rootsOf(p, env) : []))];
  return uniqueDirs(all.filter(isDir));
}

function walk(dir: string, out: { path: string; size: number; mtimeMs: number }[]): void {
  let entries;
  try {
    entries = readdirSync(dir, { withFileTypes: true });
  } catch {
    return;
  }
  for (const e of entries) {
    const p = join(dir, e.name);
    if (e.isDirectory()) walk(p, out);
    else if (e.isFile() && (e.name.endsWith('.jsonl') || e.name.endsWith('.json'))) {
      try {
        const st = statSync(p);
        out.push({ path: p, size: st.size, mtimeMs: st.mtimeMs });
      } catch {}
    }
  }
}

type Obj = Record<string, unknown>;
const str = (v: unknown) => (typeof v === 'string' && v ? v : null);
const num = (v: unknown) => (typeof v === 'number' && Number.isFinite(v) && v >= 0 ? Math.floor(v) : 0);

interface Message {
  id: string;
  sessionId: string;
  ms: number;
  model: string;
  tokens: { input: number; output: number; cached: number; thoughts: number; tool: number; total: number | null };
}

/** Fold one message-shaped object into the file's messages (last wins by id). */
function fold(o: Obj, st: { sessionId: string | null; model: string | null }, messages: Map<string, Message>): boolean {
  const model = str(o.model);
  if (model) st.model = model;
  if (o.type !== 'gemini') return false;
  const id = str(o.id), t = obj(o.tokens);
  if (!id || !t) return false;
  const ms = Date.parse(String(o.timestamp));
  if (!Number.isFinite(ms) || !st.sessionId || !st.model) return false;
  const total = typeof t.total === 'number' ? num(t.total) : null;
  messages.set(id, { id, sessionId: st.sessionId, ms, model: st.model, tokens: { input: num(t.input), output: num(t.output), cached: num(t.cached), thoughts: num(t.thoughts), tool: num(t.tool), total } });
  return true;
}

/** The counted messages of one file, and how many lines could not be read. */
export function readChatFile(text: string, json: boolean): { messages: Message[]; corrupt: number } {
  const messages = new Map<string, Message>();
  const st = { sessionId: null as string | null, model: null as string | null };
  let corrupt = 0;
  const meta = (o: Obj) => {
    if (str(o.sessionId)) st.sessionId = o.sessionId as string;
  };
  if (json) {
    let doc: Obj | null = null;
    try {
      doc = obj(JSON.parse(text));
    } catch {
      return { messages: [], corrupt: 1 };
    }
    if (!doc) return { messages: [], corrupt: 0 };
    meta(doc);
    for (const m of Array.isArray(doc.messages) ? doc.messages : []) if (obj(m)) fold(m as Obj, st, messages);
    return { messages: [...messages.values()], corrupt };
  }
  for (const line of text.split('\n')) {
    if (!line.trim()) continue;
    let o: Obj | null;
    try {
      o = obj(JSON.parse(line));
    } catch {
      corrupt++;
      continue;
    }
    if (!o) continue;
    if ('$set' in o) {
      const set = obj(o.$set);
      if (set) meta(set);
      for (const m of Array.isArray(set?.messages) ? (set!.messages as unknown[]) : []) if (obj(m)) fold(m as Obj, st, messages);
    } else if ('$rewindTo' in o) continue; // still paid for: nothing is dropped
    else if (str(o.sessionId) && !('type' in o)) meta(o);
    else fold(o, st, messages);
  }
  return { messages: [...messages.values()], corrupt };
}

/** ccusage's mapping: uncached input (+ tool), cache read; ours adds thoughts to output (see the header). */
export function geminiTokens(t: Message['tokens']): Pick<LlmRequest, 'inputTokens' | 'outputTokens' | 'cacheReadTokens' | 'reasoningTokens'> {
  const separate = t.total !== null && t.cached > 0 && t.total === t.input + t.cached + t.output + t.thoughts + t.tool;
  const uncached = separate ? t.input : Math.max(0, t.input - t.cached);
  return { inputTokens: uncached + t.tool, outputTokens: t.output + t.thoughts, cacheReadTokens: t.cached, reasoningTokens: t.thoughts };
}

/**
 * The merge id of a request: the same for its chat message and its `gemini_cli.api_response` OTel record,
 * which share no id, so it is made of what both carry: session, model and the five token counts.
 */
export function geminiRequestId(sessionId: string, model: string, t: { input: number; output: number; cached: number; thoughts: number; tool: number }): string {
  return `gemini:${sessionId}:${sha256Hex(JSON.stringify([model, t.input, t.output, t.cached, t.thoughts, t.tool])).slice(0, 24)}`;
}

/** The project root of a project dir below a root (see the header), or null. */
function projectCwd(root: string, projectDir: string, projectHash: string | null, cache: Map<string, string | null>): string | null {
  const key = `${projectDir}\u0000${projectHash ?? ''}`;
  if (cache.has(key)) return cache.get(key)!;
  let cwd: string | null = null;
  try {
    cwd = readFileSync(join(root, projectDir, '.project_root'), 'utf8').trim() || null;
  } catch {}
  if (!cwd) {
    try {
      const projects = obj(obj(JSON.parse(readFileSync(join(dirname(root), 'projects.json'), 'utf8')))?.projects) ?? {};
      for (const [path, slug] of Object.entries(projects)) {
        if (slug === projectDir || sha256Hex(path) === projectDir || (projectHash && sha256Hex(path) === projectHash)) cwd = path;
      }
    } catch {}
  }
  cache.set(key, cwd);
  return cwd;
}

/** Every counted Gemini request under the roots (RecordReader.read). */
export async function readGemini(roots: readonly string[]): Promise<RecordRead> {
  const out: RecordRead['requests'] = [];
  const seen = new Set<string>();
  const cwds = new Map<string, string | null>();
  const stamp: string[] = [];
  let corrupt = 0;
  for (const root of roots) {
    const files: { path: string; size: number; mtimeMs: number }[] = [];
    walk(root, files);
    files.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
    for (const f of files) {
      stamp.push(`${f.path}:${f.size}:${f.mtimeMs}`);
      let text: string;
      try {
        text = readFileSync(f.path, 'utf8');
      } catch {
        continue;
      }
      const r = readChatFile(text, f.path.endsWith('.json'));
      corrupt += r.corrupt;
      if (!r.messages.length) continue;
      const projectDir = relative(root, f.path).split(sep)[0]!;
      let hash: string | null = null;
      if (!f.path.endsWith('.json')) {
        try {
          hash = str(obj(JSON.parse(text.slice(0, text.indexOf('\n') >>> 0)))?.projectHash);
        } catch {}
      }
      const cwd = projectCwd(root, projectDir, hash, cwds);
      for (const m of r.messages) {
        const k = `${m.sessionId}\u0000${m.id}`;
        if (seen.has(k)) continue;
        seen.add(k);
        const request: LlmRequest = {
          key: `gemini:${m.sessionId}:${m.id}`.slice(0, 600),
          runtime: 'gemini',
          source: 'transcript',
          sessionId: m.sessionId,
          requestId: geminiRequestId(m.sessionId, m.model, m.tokens),
          messageId: m.id.slice(0, 256),
          model: m.model,
          at: new Date(m.ms).toISOString(),
          ...geminiTokens(m.tokens),
          cacheWrite5mTokens: 0,
          cacheWrite1hTokens: 0,
          speed: 'standard',
        };
        out.push({ request, cwd, ms: m.ms, reportModel: m.model, session: m.sessionId, mtimeMs: f.mtimeMs });
      }
    }
  }
  return { requests: out, corrupt, stamp: stampOf(stamp) };
}

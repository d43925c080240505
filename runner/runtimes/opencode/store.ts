// OpenCode's usage store → per-request records (reference agent-formats-more.md §2; docs/cost.md "OpenCode").
//
// Where: a data dir is `$XDG_DATA_HOME/opencode`, else `~/.local/share/opencode` (also on macOS), or each entry
// of OPENCODE_DATA_DIR (a comma-separated list, as ccusage reads it). In it: the SQLite database `opencode.db`
// (else the first `opencode-<channel>.db` in name order, as ccusage) and the legacy JSON storage
// `storage/message/<sessionID>/<messageID>.json` (+ `storage/session/<projectID>/<sessionID>.json`) of the
// releases before SQLite. OPENCODE_DB names the database itself (absolute, or relative to the data dir).
//
// The database is opened READ-ONLY while OpenCode writes it (WAL mode: recent rows sit in `opencode.db-wal`,
// which SQLite reads). How: Node's own `node:sqlite` when this Node has it (22.5+; a dynamic import, so the one
// bundled runner file still loads on Node 20), else the `sqlite3` command-line shell (`sqlite3 -readonly -json`),
// else a clear error naming both. A native module (better-sqlite3) cannot ride in the one copied runner file.
//
// What counts: assistant messages (`message.data`, role "assistant" with tokens, modelID and providerID), by
// message id; a message in both the database and the legacy files counts once (the database's copy), and the
// first data dir wins across dirs. `step-finish` parts carry the same tokens per model call and are never read:
// the message totals already include them. Tokens as ccusage maps them: input = tokens.input (OpenCode stores
// it uncached), output = tokens.output, cache read = tokens.cache.read, cache write (5 m) = tokens.cache.write;
// `tokens.total` beyond those four (reasoning, where the provider counts it apart) is added to output, as
// ccusage prices it; reasoningTokens = tokens.reasoning. OpenCode's own `cost` is NOT used: svc recomputes the
// cost from its price table (ccusage takes the recorded cost when it is > 0; docs/cost.md says why and where they differ).
//
// Sessions: a sub-agent's session (`session.parent_id`, legacy `parentID`) counts under its root session, as
// Claude Code's sub-agents count under the session that started them (ccusage lists it as its own session).
// cwd: `session.directory`, else the message's `path.cwd`.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { isAbsolute, join } from 'node:path';
import type { LlmRequest } from '../../../protocol/usage.ts';
import { envList, expandHome, homeDir, isDir } from '../../paths.ts';
import { childProcess, stampOf } from '../../lazy-builtins.ts';
import type { Env } from '../../paths.ts';
import { obj } from '../stream-util.ts';
import type { RecordRead } from '../types.ts';

type Obj = Record<string, unknown>;
const str = (v: unknown) => (typeof v === 'string' && v ? v : null);
const num = (v: unknown) => (typeof v === 'number' && Number.isFinite(v) && v >= 0 ? Math.floor(v) : 0);
const exists = (p: string) => {
  try {
    return statSync(p).isFile();
  } catch {
    return false;
  }
};

/** OpenCode's data dir for an env (xdg-basedir: XDG_DATA_HOME when absolute). */
export function opencodeDataDir(env: Env): string {
  const x = env.XDG_DATA_HOME;
  return join(x && isAbsolute(x) ? x : join(homeDir(env), '.local', 'share'), 'opencode');
}

function rootsOf(env: Env, fallback: Env): string[] {
  const dirs = envList(env.OPENCODE_DATA_DIR).length ? envList(env.OPENCODE_DATA_DIR).map((p) => expandHome(p, fallback)) : [opencodeDataDir(env)];
  const db = env.OPENCODE_DB && env.OPENCODE_DB !== ':memory:' ? env.OPENCODE_DB : null;
  // OPENCODE_DB: the database itself, before the data dirs (whose legacy files are still read).
  return db ? [isAbsolute(db) ? db : join(dirs[0]!, db), ...dirs] : dirs;
}

/** The stores of this machine's env and of each opencode profile's env: database files and data dirs that exist. */
export function opencodeRoots(env: Env, profileEnvs: readonly Env[]): string[] {
  const all = [...rootsOf(env, env), ...profileEnvs.flatMap((p) => (p.OPENCODE_DATA_DIR || p.OPENCODE_DB || p.XDG_DATA_HOME ? rootsOf(p, env) : []))];
  return [...new Set(all)].filter((p) => isDir(p) || exists(p));
}

/** The database of a data dir: opencode.db, else the first opencode-*.db by name (ccusage's rule). */
export function databaseOf(dir: string): string | null {
  if (exists(join(dir, 'opencode.db'))) return join(dir, 'opencode.db');
  let names: string[] = [];
  try {
    names = readdirSync(dir).filter((n) => /^opencode-.+\.db$/.test(n)).sort();
  } catch {}
  return names.length ? join(dir, names[0]!) : null;
}

export interface Row { id: string; session_id: string; data: string; time_updated?: number | null }
export interface SessionRow { id: string; parent_id: string | null; directory: string | null }

let sqliteImpl: Promise<((file: string, sql: string) => Promise<Obj[]>)> | null = null;

/** How a database is read on this machine (see the header): node:sqlite, else the sqlite3 shell. */
function sqlite(): Promise<(file: string, sql: string) => Promise<Obj[]>> {
  sqliteImpl ??= (async () => {
    try {
      const mod = 'node:sqlite';
      const { DatabaseSync } = (await import(/* @vite-ignore */ mod)) as { DatabaseSync: new (p: string, o: object) => { prepare(s: string): { all(): Obj[] }; close(): void } };
      return async (file: string, sql: string) => {
        const db = new DatabaseSync(file, { readOnly: true });
        try {
          return db.prepare(sql).all();
        } finally {
          db.close();
        }
      };
    } catch {}
    return (file: string, sql: string) =>
      new Promise<Obj[]>((resolve, reject) => {
        childProcess().execFile('sqlite3', ['-readonly', '-json', '-cmd', '.timeout 5000', file, sql], { maxBuffer: 1 << 30 }, (err, stdout, stderr) => {
          if (err) {
            const missing = (err as NodeJS.ErrnoException).code === 'ENOENT';
            reject(new Error(missing ? `OpenCode's database ${file} needs Node 22.5+ (node:sqlite) or the sqlite3 command-line shell on PATH; neither is here` : `sqlite3 ${file}: ${String(stderr).trim().slice(0, 300) || err.message}`));
            return;
          }
          try {
            resolve(stdout.trim() ? (JSON.parse(stdout) as Obj[]) : []);
          } catch (e) {
            reject(e as Error);
          }
        });
      });
  })();
  return sqliteImpl;
}

/** The assistant messages and sessions of one database, read-only. */
export async function readDatabase(file: string): Promise<{ rows: Row[]; sessions: SessionRow[] }> {
  const q = await sqlite();
  const tables = new Set((await q(file, "select name from sqlite_master where type = 'table'")).map((t) => String(t.name)));
  if (!tables.has('message')) return { rows: [], sessions: [] };
  const rows = (await q(file, 'select id, session_id, time_updated, data from message')) as unknown as Row[];
  let sessions: SessionRow[] = [];
  if (tables.has('session')) {
    const cols = new Set((await q(file, "select name from pragma_table_info('session')")).map((c) => String(c.name)));
    sessions = (await q(file, `select id, ${cols.has('parent_id') ? 'parent_id' : 'null as parent_id'}, ${cols.has('directory') ? 'directory' : 'null as directory'} from session`)) as unknown as SessionRow[];
  }
  return { rows, sessions };
}

function listJson(dir: string): string[] {
  const out: string[] = [];
  let subs;
  try {
    subs = readdirSync(dir, { withFileTypes: true });
  } catch {
    return out;
  }
  for (const s of subs) {
    if (!s.isDirectory()) continue;
    try {
      for (const f of readdirSync(join(dir, s.name))) if (f.endsWith('.json')) out.push(join(dir, s.name, f));
    } catch {}
  }
  return out.sort();
}

interface Message { id: string; session: string; ms: number; model: string; provider: string; cwd: string | null; data: Obj; updatedMs: number }

/** An assistant message that counts (ccusage's conditions: tokens, a model and a provider id, a creation time). */
export function parseMessage(id: string, session: string, data: Obj, updatedMs: number): Message | null {
  if (data.role !== 'assistant' || !obj(data.tokens)) return null;
  const model = str(data.modelID), provider = str(data.providerID);
  const ms = num(obj(data.time)?.created);
  if (!model || !provider || !ms) return null;
  return { id, session, ms, model, provider, cwd: str(obj(data.path)?.cwd), data, updatedMs: updatedMs || ms };
}

/** ccusage's token mapping, with the extra tokens (total beyond the four) in output. */
export function opencodeTokens(data: Obj): Pick<LlmRequest, 'inputTokens' | 'outputTokens' | 'cacheReadTokens' | 'cacheWrite5mTokens' | 'cacheWrite1hTokens' | 'reasoningTokens'> {
  const t = obj(data.tokens) ?? {};
  const c = obj(t.cache) ?? {};
  const input = num(t.input), output = num(t.output), read = num(c.read), write = num(c.write);
  const extra = typeof t.total === 'number' ? Math.max(0, num(t.total) - input - output - read - write) : 0;
  return { inputTokens: input, outputTokens: output + extra, cacheReadTokens: read, cacheWrite5mTokens: write, cacheWrite1hTokens: 0, reasoningTokens: num(t.reasoning) };
}

const stat = (p: string) => {
  try {
    const s = statSync(p);
    return `${p}:${s.size}:${s.mtimeMs}`;
  } catch {
    return `${p}:-`;
  }
};

/** Every counted OpenCode request in the stores (RecordReader.read). */
export async function readOpencode(roots: readonly string[]): Promise<RecordRead> {
  const messages = new Map<string, Message>();
  const sessions = new Map<string, { parent: string | null; cwd: string | null }>();
  const stamp: string[] = [];
  let corrupt = 0;
  const readDb = async (file: string) => {
    stamp.push(stat(file), stat(`${file}-wal`));
    const r = await readDatabase(file);
    for (const s of r.sessions) if (!sessions.has(s.id)) sessions.set(s.id, { parent: s.parent_id || null, cwd: s.directory || null });
    for (const row of r.rows) {
      if (messages.has(row.id)) continue;
      let data: Obj | null;
      try {
        data = obj(JSON.parse(row.data));
      } catch {
        corrupt++;
        continue;
      }
      const m = data && parseMessage(row.id, row.session_id, data, num(row.time_updated));
      if (m) messages.set(m.id, m);
    }
  };
  const dbs = new Set<string>();
  for (const root of roots) {
    if (!isDir(root)) {
      if (!dbs.has(root)) (dbs.add(root), await readDb(root));
      continue;
    }
    const db = databaseOf(root);
    if (db && !dbs.has(db)) (dbs.add(db), await readDb(db));
    // Legacy JSON storage: after the database, so the database's copy of a migrated message wins.
    for (const f of listJson(join(root, 'storage', 'session'))) {
      stamp.push(stat(f));
      try {
        const s = obj(JSON.parse(readFileSync(f, 'utf8')));
        const id = str(s?.id);
        if (id && !sessions.has(id)) sessions.set(id, { parent: str(s!.parentID), cwd: str(s!.directory) });
      } catch {
        corrupt++;
      }
    }
    for (const f of listJson(join(root, 'storage', 'message'))) {
      let data: Obj | null, mtimeMs = 0;
      try {
        const st = statSync(f);
        mtimeMs = st.mtimeMs;
        stamp.push(`${f}:${st.size}:${st.mtimeMs}`);
        data = obj(JSON.parse(readFileSync(f, 'utf8')));
      } catch {
        corrupt++;
        continue;
      }
      const id = str(data?.id), session = str(data?.sessionID);
      if (!data || !id || !session || messages.has(id)) continue;
      const m = parseMessage(id, session, data, mtimeMs);
      if (m) messages.set(id, m);
    }
  }
  const rootOf = (id: string) => {
    let cur = id;
    for (let i = 0; i < 64; i++) {
      const p = sessions.get(cur)?.parent;
      if (!p || p === cur) break;
      cur = p;
    }
    return cur;
  };
  const out: RecordRead['requests'] = [];
  for (const m of messages.values()) {
    const session = rootOf(m.session);
    const cwd = sessions.get(session)?.cwd ?? sessions.get(m.session)?.cwd ?? m.cwd;
    const request: LlmRequest = {
      key: `opencode:${m.id}`.slice(0, 600),
      runtime: 'opencode',
      source: 'transcript',
      sessionId: session,
      requestId: `opencode:${m.id}`.slice(0, 600),
      messageId: m.id.slice(0, 256),
      model: m.model,
      at: new Date(m.ms).toISOString(),
      ...opencodeTokens(m.data),
      speed: 'standard',
    };
    out.push({ request, cwd, ms: m.ms, reportModel: m.model, session, mtimeMs: m.updatedMs });
  }
  out.sort((a, b) => a.ms - b.ms || (a.request.key < b.request.key ? -1 : 1));
  return { requests: out, corrupt, stamp: stampOf(stamp) };
}

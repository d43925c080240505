// Generated OpenCode stores with every counting trap (docs/cost.md "OpenCode"), written with the sqlite3 shell in
// OpenCode's schema (session / message / part, WAL mode): two data dirs (OPENCODE_DATA_DIR is a comma list), the
// second with only a channel database `opencode-beta.db`; step-finish parts carrying the same tokens as their
// message (never summed with it); a sub-agent session (parent_id); legacy JSON storage, one of whose messages
// was migrated into the database too (counts once); messages with OpenCode's own `cost` > 0 that differs from
// the price table (ccusage takes it, svc recomputes); a `total` above the four counts (reasoning, priced as
// output); user messages, an assistant message without tokens, one without providerID and a corrupt row.
// needs: sqlite3
import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { costUsd, DEFAULT_PRICES, findPrice } from '../../protocol/prices.ts';

export interface OcTokens { input: number; output: number; reasoning?: number; read?: number; write?: number; total?: number }
export interface OcFixture {
  home: string;
  dirs: string[];
  /** Per `<day> <model>`: ccusage's cost minus svc's (OpenCode's recorded cost where > 0, else 0). */
  recordedDelta: Map<string, number>;
  /** Per `<day> <model>` and per session: tokens of `total` beyond the four counts (svc's outputTokens include them, ccusage's do not). */
  extra: Map<string, number>;
  /** Sub-agent session id → its parent's. */
  parent: Map<string, string>;
  /** cwd of each root session id. */
  cwd: Map<string, string>;
}

export const SCHEMA = `
pragma journal_mode = wal;
create table if not exists project (id text primary key, worktree text not null, time_created integer not null, time_updated integer not null);
create table if not exists session (id text primary key, project_id text not null, parent_id text, slug text not null default '', directory text not null,
  title text not null default '', version text not null default '', time_created integer not null, time_updated integer not null);
create table if not exists message (id text primary key, session_id text not null, time_created integer not null, time_updated integer not null, data text not null);
create table if not exists part (id text primary key, message_id text not null, session_id text not null, time_created integer not null, time_updated integer not null, data text not null);
`;

const q = (s: string) => `'${s.replace(/'/g, "''")}'`;
export const sqlite = (file: string, sql: string) => execFileSync('sqlite3', [file], { input: sql, encoding: 'utf8' });

/** svc's (and ccusage's) tokens of one message, and its cost at the seed's prices. */
export function recomputed(model: string, t: OcTokens): number {
  const extra = t.total !== undefined ? Math.max(0, t.total - t.input - t.output - (t.read ?? 0) - (t.write ?? 0)) : 0;
  return costUsd({ inputTokens: t.input, outputTokens: t.output + extra, cacheReadTokens: t.read ?? 0, cacheWrite5mTokens: t.write ?? 0, cacheWrite1hTokens: 0 }, findPrice(model, DEFAULT_PRICES)!);
}

export function assistant(id: string, session: string, at: string, provider: string | null, model: string, t: OcTokens | null, cwd: string, cost = 0) {
  const created = Date.parse(at);
  return {
    id, sessionID: session, role: 'assistant', time: { created, completed: created + 4000 }, parentID: `msg_user_${id}`, modelID: model,
    ...(provider ? { providerID: provider } : {}), mode: 'build', agent: 'build', path: { cwd, root: cwd }, cost,
    ...(t ? { tokens: { ...(t.total !== undefined ? { total: t.total } : {}), input: t.input, output: t.output, reasoning: t.reasoning ?? 0, cache: { read: t.read ?? 0, write: t.write ?? 0 } } } : {}),
    finish: 'stop',
  };
}

export function writeOpencodeFixtures(dir: string): OcFixture {
  const home = join(dir, 'home');
  const dirA = join(home, '.local', 'share', 'opencode');
  const dirB = join(dir, 'other-opencode');
  mkdirSync(dirA, { recursive: true });
  mkdirSync(dirB, { recursive: true });
  const fx: OcFixture = { home, dirs: [dirA, dirB], recordedDelta: new Map(), extra: new Map(), parent: new Map(), cwd: new Map() };
  const dbA = join(dirA, 'opencode.db');
  const dbB = join(dirB, 'opencode-beta.db');
  let sqlA = SCHEMA, sqlB = SCHEMA;
  const session = (db: 'A' | 'B', id: string, cwd: string, parent: string | null = null) => {
    const s = `insert into session (id, project_id, parent_id, slug, directory, title, version, time_created, time_updated) values (${q(id)}, 'prj_1', ${parent ? q(parent) : 'null'}, 'slug', ${q(cwd)}, 't', '1.0.0', 0, 0);\n`;
    db === 'A' ? (sqlA += s) : (sqlB += s);
    if (parent) fx.parent.set(id, parent);
    else fx.cwd.set(id, cwd);
  };
  let n = 0;
  const message = (db: 'A' | 'B', m: ReturnType<typeof assistant> | Record<string, unknown>, raw?: string) => {
    const { id, sessionID, ...data } = m as Record<string, any>;
    const created = data.time?.created ?? 0;
    let s = `insert into message (id, session_id, time_created, time_updated, data) values (${q(id)}, ${q(sessionID)}, ${created}, ${created + 5000}, ${q(raw ?? JSON.stringify(data))});\n`;
    // A step-start and a step-finish part per model call, the finish with the call's tokens and cost (never counted).
    if (data.role === 'assistant' && data.tokens) {
      for (const part of [{ type: 'step-start', snapshot: 'abc' }, { type: 'text', text: 'Done.' }, { type: 'step-finish', reason: 'stop', snapshot: 'abc', cost: data.cost, tokens: data.tokens }]) {
        s += `insert into part (id, message_id, session_id, time_created, time_updated, data) values ('prt_${++n}', ${q(id)}, ${q(sessionID)}, ${created}, ${created}, ${q(JSON.stringify(part))});\n`;
      }
    }
    db === 'A' ? (sqlA += s) : (sqlB += s);
  };
  const count = (at: string, model: string, t: OcTokens, cost: number, ses: string) => {
    const extra = t.total !== undefined ? Math.max(0, t.total - t.input - t.output - (t.read ?? 0) - (t.write ?? 0)) : 0;
    for (const k of [`${at.slice(0, 10)} ${model}`, ses]) if (extra) fx.extra.set(k, (fx.extra.get(k) ?? 0) + extra);
    if (cost > 0) {
      const k = `${at.slice(0, 10)} ${model}`;
      fx.recordedDelta.set(k, (fx.recordedDelta.get(k) ?? 0) + cost - recomputed(model, t));
    }
  };
  const a = (db: 'A' | 'B', id: string, ses: string, at: string, provider: string, model: string, t: OcTokens, cwd: string, cost = 0) => {
    message(db, assistant(id, ses, at, provider, model, t, cwd, cost));
    count(at, model, t, cost, ses);
  };
  const user = (db: 'A' | 'B', id: string, ses: string, at: string) => message(db, { id, sessionID: ses, role: 'user', time: { created: Date.parse(at) }, agent: 'build', model: { providerID: 'anthropic', modelID: 'claude-sonnet-4-5' } });

  const app = '/work/my-app', lib = '/work/lib';
  session('A', 'ses_main1', app);
  user('A', 'msg_001', 'ses_main1', '2026-05-17T09:00:00.000Z');
  a('A', 'msg_002', 'ses_main1', '2026-05-17T09:00:05.000Z', 'anthropic', 'claude-sonnet-4-5', { input: 12, output: 187, read: 19024, write: 200, total: 19423 }, app);
  // OpenCode's own cost, not the table's: ccusage reports it, svc recomputes.
  a('A', 'msg_003', 'ses_main1', '2026-05-17T09:01:00.000Z', 'anthropic', 'claude-sonnet-4-5', { input: 40, output: 900, read: 20000, write: 1500 }, app, 0.05);
  // Reasoning the provider counts apart: total above the four counts, the rest priced as output.
  a('A', 'msg_004', 'ses_main1', '2026-05-17T09:02:00.000Z', 'openai', 'gpt-5', { input: 3000, output: 400, reasoning: 250, read: 12000, total: 15650 }, app);
  message('A', assistant('msg_005', 'ses_main1', '2026-05-17T09:03:00.000Z', 'openai', 'gpt-5', null, app)); // no tokens yet: skipped
  message('A', assistant('msg_006', 'ses_main1', '2026-05-17T09:03:30.000Z', null, 'gpt-5', { input: 999, output: 9 }, app)); // no providerID: skipped
  message('A', { id: 'msg_007', sessionID: 'ses_main1' }, '{"role":"assistant","tokens":'); // corrupt row
  // A sub-agent (task tool) session: counts under ses_main1 in svc.
  session('A', 'ses_sub1', app, 'ses_main1');
  a('A', 'msg_010', 'ses_sub1', '2026-05-17T09:05:00.000Z', 'zai', 'glm-4.6', { input: 5000, output: 800, read: 30000 }, app);
  a('A', 'msg_011', 'ses_sub1', '2026-05-18T10:00:00.000Z', 'zai', 'glm-4.6', { input: 7000, output: 100, read: 1000 }, app, 0.01);
  session('A', 'ses_main2', lib);
  a('A', 'msg_020', 'ses_main2', '2026-05-18T11:00:00.000Z', 'opencode', 'qwen3-coder', { input: 22000, output: 3000, read: 50000, write: 4000 }, lib);
  a('A', 'msg_021', 'ses_main2', '2026-06-02T11:00:00.000Z', 'openrouter', 'qwen3-coder', { input: 1000, output: 200 }, lib);
  // Migrated from the legacy storage: in the database AND in storage/message (counts once).
  a('A', 'msg_030', 'ses_old1', '2026-04-30T08:00:00.000Z', 'anthropic', 'claude-sonnet-4-5', { input: 50, output: 500, read: 9000, write: 700 }, lib);
  session('A', 'ses_old1', lib);

  // The second data dir: a channel database only.
  session('B', 'ses_beta', app);
  a('B', 'msg_040', 'ses_beta', '2026-06-02T12:00:00.000Z', 'xai', 'grok-code-fast-1', { input: 4000, output: 600, read: 8000, write: 100 }, app);
  a('B', 'msg_041', 'ses_beta', '2026-06-03T12:00:00.000Z', 'anthropic', 'claude-sonnet-4-5', { input: 100, output: 50, read: 1000 }, app);
  sqlite(dbA, sqlA);
  sqlite(dbB, sqlB);

  // Legacy JSON storage (before SQLite): a session with its own messages, and the copy of msg_030.
  const legacy = (id: string, m: Record<string, unknown>) => {
    mkdirSync(join(dirA, 'storage', 'message', String(m.sessionID)), { recursive: true });
    writeFileSync(join(dirA, 'storage', 'message', String(m.sessionID), `${id}.json`), JSON.stringify(m));
  };
  mkdirSync(join(dirA, 'storage', 'session', 'prj_1'), { recursive: true });
  writeFileSync(join(dirA, 'storage', 'session', 'prj_1', 'ses_old1.json'), JSON.stringify({ id: 'ses_old1', projectID: 'prj_1', directory: lib, title: 'old', version: '0.9.0', time: { created: 0, updated: 0 } }));
  writeFileSync(join(dirA, 'storage', 'session', 'prj_1', 'ses_old2.json'), JSON.stringify({ id: 'ses_old2', projectID: 'prj_1', directory: app, title: 'old', version: '0.9.0', time: { created: 0, updated: 0 } }));
  fx.cwd.set('ses_old2', app);
  legacy('msg_030', assistant('msg_030', 'ses_old1', '2026-04-30T08:00:00.000Z', 'anthropic', 'claude-sonnet-4-5', { input: 50, output: 500, read: 9000, write: 700 }, lib));
  const t31 = { input: 300, output: 120, read: 4000, write: 0 };
  legacy('msg_031', assistant('msg_031', 'ses_old2', '2026-04-30T09:00:00.000Z', 'anthropic', 'claude-sonnet-4-5', t31, app));
  legacy('msg_032', { id: 'msg_032', sessionID: 'ses_old2', role: 'user', time: { created: Date.parse('2026-04-30T09:00:00.000Z') } });
  return fx;
}

// Shared set-up of the audit anchor tests: a real server with an admin and a few audited changes, a
// verification run over HTTP, and tampering "as a superuser": with the real `psql` binary on PostgreSQL
// (while the server runs); on PGlite, whose data directory one process owns, through the test's own
// handle while the server is stopped, then the server is started again on the same data and anchor file.
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import * as assert from 'uvu/assert';
import { GENESIS, recordHash, toRecord } from '../../functions/audit/audit.ts';
import type { AuditRecord, AuditRow } from '../../functions/audit/audit.ts';
import { sql } from '../../functions/lib/db/port.ts';
import type { Db } from '../../functions/lib/db/port.ts';
import { openPglite } from '../../functions/lib/db/pglite.ts';
import { openPostgres } from '../../functions/lib/db/postgres.ts';
import { TEST_DB, serverDbEnv } from '../helpers/db.ts';
import { startServer } from '../helpers/server.ts';
import type { RunningServer } from '../helpers/server.ts';
import { waitUntil } from '../runner/_harness.ts';

export const KEY = Buffer.alloc(32, 7).toString('base64');

export class Instance {
  private earlier = '';
  constructor(
    public server: RunningServer,
    readonly dbEnv: Record<string, string>,
    readonly env: Record<string, string>,
    private readonly dropDb: () => Promise<void>,
    readonly token = server.admin.token,
  ) {}

  get anchorPath(): string {
    return this.dbEnv.AUDIT_ANCHOR_PATH;
  }

  /** Every log line of every process that ran on this instance's data (restarts included). */
  output(): string {
    return this.earlier + this.server.output();
  }

  /** fetch() as the admin, across restarts. */
  api(path: string, init: RequestInit & { json?: unknown } = {}): Promise<Response> {
    const { json, ...rest } = init;
    const headers = new Headers(rest.headers);
    headers.set('authorization', `Bearer ${this.token}`);
    if (json !== undefined) headers.set('content-type', 'application/json');
    return fetch(this.server.url + path, { ...rest, headers, body: json !== undefined ? JSON.stringify(json) : rest.body });
  }

  /** Stop the server (SIGTERM), run `between`, start it again on the same data and anchor file. */
  async restart(between: () => Promise<void> = async () => {}): Promise<void> {
    this.earlier += this.server.output();
    await this.server.stop();
    await between();
    this.server = await startServer({ dbEnv: this.dbEnv, env: this.env });
  }

  async cleanup(): Promise<void> {
    await this.server.cleanup();
    await this.dropDb();
  }
}

export interface VerificationBody {
  ok: boolean;
  recordsChecked: number;
  firstBrokenSeq: number | null;
  problem: string | null;
  scope: string;
  startedAt: string;
}

/** A server with an admin (3 records from the bootstrap) and `changes` settings updates (1 record each). */
export async function instance(env: Record<string, string> = { APP_ENCRYPTION_KEY: KEY }, changes = 3): Promise<Instance> {
  const { env: dbEnv, cleanup } = await serverDbEnv();
  const inst = new Instance(await startServer({ admin: true, dbEnv, env }), dbEnv, env, cleanup);
  await change(inst, changes);
  return inst;
}

/** A second instance, on a new database of its own, whose AUDIT_ANCHOR_PATH is `first`'s file (#33). */
export async function sharing(first: Instance, env: Record<string, string> = { APP_ENCRYPTION_KEY: KEY }): Promise<Instance> {
  const { env: own, cleanup } = await serverDbEnv();
  const dbEnv = { ...own, AUDIT_ANCHOR_PATH: first.anchorPath };
  return new Instance(await startServer({ admin: true, dbEnv, env }), dbEnv, env, cleanup);
}

export async function change(inst: Instance, n = 1): Promise<void> {
  for (let i = 0; i < n; i++) {
    const res = await inst.api('/api/settings', { method: 'PATCH', json: { 'instance.name': `svc ${Math.random()}` } });
    assert.is(res.status, 200);
  }
}

export async function latestVerification(inst: Instance): Promise<VerificationBody | null> {
  return (await (await inst.api('/api/audit/verification')).json()).verification;
}

/** Run `audit.verify` now (the whole chain) and wait for its result. */
export async function verifyNow(inst: Instance): Promise<VerificationBody> {
  const run = await inst.api('/api/schedules/audit.verify/run', { method: 'POST' });
  assert.is(run.status, 202);
  const { scheduledFor } = await run.json();
  let v: VerificationBody | null = null;
  await waitUntil(async () => {
    v = await latestVerification(inst);
    return Boolean(v && v.scope === 'full' && v.startedAt >= scheduledFor);
  }, 30_000, 'the verification to finish');
  return v!;
}

export function anchorFile(inst: Instance): { seq: number; hash: string; at: string; chain: string; mac: string | null } {
  return JSON.parse(readFileSync(inst.anchorPath, 'utf8'));
}

export async function notifications(inst: Instance): Promise<{ kind: string; runnerId: string | null; data: { problem: string; firstBrokenSeq: number | null } }[]> {
  return (await (await inst.api('/api/notifications')).json()).notifications;
}

export const records = async (db: Db): Promise<AuditRecord[]> => (await db.query<AuditRow>(sql`select * from audit_records order by seq`)).map(toRecord);

const literal = (v: unknown) => (v === null ? 'null' : `'${String(v).replace(/'/g, "''")}'`);

/** SQL that inserts a record (no MAC: whoever writes it has no key). */
export function insertSql(r: AuditRecord): string {
  return `insert into audit_records (seq, at, actor_id, actor_label, action, target_type, target_id, diff, request_id, prev_hash, hash)
          values (${r.seq}, ${literal(r.at)}, ${literal(r.actorId)}, ${literal(r.actorLabel)}, ${literal(r.action)}, ${literal(r.targetType)},
                  ${literal(r.targetId)}, ${literal(JSON.stringify(r.diff))}::jsonb, ${literal(r.requestId)}, ${literal(r.prevHash)}, ${literal(r.hash)});`;
}

/** A self-consistent chain of `n` made-up records from genesis, with valid hashes. */
export function forgedChain(n: number, after: AuditRecord | null = null): AuditRecord[] {
  const out: AuditRecord[] = [];
  let prev = after;
  for (let i = 0; i < n; i++) {
    const base = { seq: (prev?.seq ?? 0) + 1, at: new Date().toISOString(), actorId: null, actorLabel: 'mallory', action: 'settings.update', targetType: 'settings', targetId: null, diff: { forged: i }, requestId: null };
    const prevHash = prev?.hash ?? GENESIS;
    prev = { ...base, prevHash, hash: recordHash(prevHash, base) };
    out.push(prev);
  }
  return out;
}

/** Bypass the append-only triggers for the statements, as only a superuser or the owner can. */
export const behindTriggers = (table: string, statements: string) =>
  `alter table ${table} disable trigger user;\n${statements}\nalter table ${table} enable trigger user;`;

/**
 * Tamper as a superuser: `plan` reads through a handle and returns the SQL to run. PostgreSQL: run it
 * with `psql` while the server runs. PGlite: stop the server, run it through the handle, start again.
 */
export async function tamper(inst: Instance, plan: (db: Db) => Promise<string>): Promise<void> {
  if (TEST_DB === 'postgres') {
    const db = await openPostgres(inst.dbEnv.DATABASE_URL, 1);
    const text = await plan(db).finally(() => db.close());
    const psql = spawnSync('psql', [inst.dbEnv.DATABASE_URL, '-X', '-q', '-v', 'ON_ERROR_STOP=1', '-f', '-'], { input: text, encoding: 'utf8' });
    assert.is(psql.status, 0, psql.stderr);
    return;
  }
  await inst.restart(async () => {
    const db = await openPglite(inst.dbEnv.PGLITE_DATA_DIR);
    try {
      await db.exec(await plan(db));
    } finally {
      await db.close();
    }
  });
}

export async function onInstance(env: Record<string, string> | undefined, fn: (inst: Instance) => Promise<void>): Promise<void> {
  const inst = await instance(env);
  try {
    await fn(inst);
  } finally {
    await inst.cleanup();
  }
}

export const failureNotifications = async (inst: Instance) => (await notifications(inst)).filter((n) => n.kind === 'audit.verification_failed');

/**
 * Run a verification and assert the three reports of one failure: the result, an ERROR line and an
 * admin notification; with `anchoredAt`, also that the anchor file kept the checkpoint from before the
 * tampering (a broken chain is never re-anchored).
 */
export async function assertReported(inst: Instance, problem: RegExp, o: { firstBrokenSeq?: number; anchoredAt?: number } = {}): Promise<void> {
  const v = await verifyNow(inst);
  assert.is(v.ok, false);
  assert.match(v.problem!, problem, `problem: ${v.problem}`);
  if (o.firstBrokenSeq !== undefined) assert.is(v.firstBrokenSeq, o.firstBrokenSeq);
  const seq = o.firstBrokenSeq !== undefined ? `firstBrokenSeq=${o.firstBrokenSeq} ` : '.*';
  const line = new RegExp(`ERROR audit chain broken .*scope=full ${seq}problem="${problem.source.replace(/^\^/, '')}`);
  await waitUntil(() => line.test(inst.output()), 10_000, `${line} in the log`);
  const sent = await failureNotifications(inst);
  assert.ok(sent.length >= 1, 'admins are notified');
  assert.match(sent[0].data.problem, problem);
  assert.is(sent[0].runnerId, null);
  if (o.anchoredAt !== undefined) assert.is(anchorFile(inst).seq, o.anchoredAt, 'the anchor file still holds the checkpoint from before the tampering');
}

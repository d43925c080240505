// Commands to a runner from any server process (spec: Server commands to a runner; DESIGN §3). A command
// is a row in `runner_commands`; NOTIFY only says "look at row X", so payloads of any size cross
// replicas, and PGlite's in-process LISTEN/NOTIFY serves a single process the same way.
//   1. command() waits briefly for a runner that is reconnecting (awaitOnline), inserts the row — `sent`
//      and sent at once when this process holds the socket, else `pending` with a NOTIFY on
//      `svc_runner_cmd` in the same statement, on which the holder claims it (pending → sent) and sends
//      it (onCommand);
//   2. the runner's `result` frame finishes the row (onResult) and wakes the requester here, or through
//      `svc_runner_cmd_done` (in the same statement as the answer) on the process where it waits; the
//      requester then reads the row. A write and its NOTIFY share one commit: under heavy ingest each
//      commit waits for a WAL flush behind the events', and a command's round trip pays 3 of them, not 6;
//   3. while it waits, the requester re-reads its row every REDELIVER_CHECK_MS: an answer whose NOTIFY
//      was lost is seen, and a command lost with a socket is announced again (redeliver);
//   4. a runner's hello sends what is still unanswered for it (sendUnanswered); a re-made LISTEN
//      connection re-reads the pending commands of the runners held here (sendPendingHeld).
// Whichever process sends a code-host command builds its frame then (frameOf): in App mode the frame
// carries the repository's installation token (functions/codehost/app-mode.ts) beside the args — never
// in them, so the row, the audit log and the logs never hold it.
// At the deadline the row becomes `timeout` unless it was answered.
import { randomUUID } from 'node:crypto';
import { COMMANDS, READ_ONLY_COMMANDS } from '../../protocol/commands.ts';
import type { CommandName } from '../../protocol/commands.ts';
import { REPLAY_CAPABILITY } from '../../protocol/frames.ts';
import { sql } from '../lib/db/index.ts';
import type { Db } from '../lib/db/index.ts';
import type { Logger } from '../lib/log.ts';
import type { AppTokenSource } from '../codehost/app-mode.ts';
import type { ServerFrame } from '../../protocol/frames.ts';
import { resubscribed } from './socket.ts';
import type { Conn, ResultFrame, RunnerSockets } from './socket.ts';
import type { CommandOutcome } from '../lib/context.ts';

const CMD = 'svc_runner_cmd';
const DONE = 'svc_runner_cmd_done';
/** How long a command waits for a runner that was connected moments ago to come back (awaitOnline). */
const RECONNECT_GRACE_MS = 5_000;
/** How often a waiting command checks that it was not lost with a socket (redeliver). */
const REDELIVER_CHECK_MS = 1_000;

export type { CommandOutcome };

export class CommandRelay {
  private readonly waiters = new Map<string, () => void>();
  /** Per waiting command: end its wait between checks now, so it reads its row again (resubscribed). */
  private readonly nudges = new Map<string, () => void>();

  constructor(
    private readonly db: Db,
    private readonly log: Logger,
    private readonly sockets: RunnerSockets,
    private readonly appTokens?: AppTokenSource,
  ) {}

  /** A command's frame, with the App's installation tokens for a code-host command (none when minting failed: the runner uses its own). */
  private async frameOf(runnerId: string, requestId: string, name: CommandName, args: unknown): Promise<ServerFrame> {
    const frame: ServerFrame = { type: 'command', requestId, name, args, timeoutMs: COMMANDS[name].timeoutMs };
    const codehost = await this.appTokens?.forCommand(runnerId, name, args).catch((err) => {
      this.log.warn('no App token for the command: it goes out without one', { requestId, name, error: err instanceof Error ? err.message : String(err) });
      return undefined;
    });
    return codehost?.length ? { ...frame, codehost } : frame;
  }

  /** After a re-subscribe each channel re-reads what a missed notice would have said, rather than leaving it to a timeout. */
  listen(): Promise<() => Promise<void>>[] {
    return [
      this.db.listen(CMD, (p) => void this.onCommand(p).catch((err) => this.log.error('command dispatch failed', { error: err })), () => resubscribed(this.log, 'commands', () => this.sendPendingHeld())),
      this.db.listen(DONE, (p) => this.waiters.get(p)?.(), () => resubscribed(this.log, 'answers', async () => this.nudges.forEach((nudge) => nudge()))),
    ];
  }

  /**
   * Whether the runner is online to take a command. A runner that was connected moments ago (seen within
   * RECONNECT_GRACE_MS) is most likely reconnecting — its server process was restarted or replaced in a
   * rolling upgrade, and runners come back within their first backoff step (1 s, jittered) — so the command
   * waits up to that long for it rather than failing runner_offline at once.
   */
  private async awaitOnline(runnerId: string): Promise<boolean> {
    const end = Date.now() + RECONNECT_GRACE_MS;
    for (;;) {
      if (this.sockets.get(runnerId)) return true;
      const [r] = await this.db.query<{ online: boolean; recent: boolean }>(sql`
        select connected_instance is not null and last_seen_at > now() - interval '60 seconds' as online,
               last_seen_at > now() - interval '15 seconds' as recent
          from runners where id = ${runnerId} and revoked_at is null`);
      if (!r) return false;
      if (r.online) return true;
      if (!r.recent || Date.now() >= end) return false;
      await new Promise((res) => setTimeout(res, 200));
    }
  }

  /** Send a command and wait up to its timeout for the answer, from any API process. */
  async command(runnerId: string, name: CommandName, args: unknown, userId: string | null): Promise<CommandOutcome> {
    if (!(await this.awaitOnline(runnerId))) return { status: 'offline' };
    const requestId = randomUUID();
    // Held here: send at once. Held elsewhere: the row plus a NOTIFY lets that replica send it.
    const local = this.sockets.get(runnerId);
    // The process holding the runner's socket, read BEFORE the command goes out: redeliver re-sends it
    // when the holder changed since. Read while it went out, it could already name the process the runner
    // had moved to while the old holder was still taking the command (a replica stopping in a rolling
    // restart): the command was lost with the old socket and never sent again (command_timeout).
    const holder = { instance: local ? this.sockets.instance : await this.holderOf(runnerId) };
    // The row and its NOTIFY commit together: one commit (one WAL flush) on the command's path, not two.
    const insert = sql`insert into runner_commands (request_id, runner_id, name, args, requested_by, status)
      values (${requestId}, ${runnerId}, ${name}, ${sql.json(args)}, ${userId}, ${local ? 'sent' : 'pending'}) returning request_id`;
    // Waiting for the answer from before the row exists: the answer's NOTIFY can be handled here before the
    // insert's own reply is. They come on two connections (the LISTEN one and a pooled one, which postgres.js
    // may have pipelined behind other statements), and nothing orders them on the way in: under ingest the
    // holder had run the command and notified its answer first for a few commands in a thousand. A waiter
    // set after the insert missed that NOTIFY, and the requester waited for its next check of the row, a
    // whole REDELIVER_CHECK_MS (bench/fleet.mjs prints the slowest commands by hop: `out` ≈ 1,000 ms).
    let isAnswered = false;
    const answered = new Promise<void>((resolve) => this.waiters.set(requestId, () => ((isAnswered = true), resolve())));
    let timer: NodeJS.Timeout | undefined;
    let nudge = () => {};
    this.nudges.set(requestId, () => nudge());
    try {
      await this.db.query(local ? insert : sql`with c as (${insert}) select pg_notify(${CMD}, request_id) from c`);
      if (local) this.sockets.send(local, await this.frameOf(runnerId, requestId, name, args));
      const deadline = Date.now() + COMMANDS[name].timeoutMs;
      while (!isAnswered && Date.now() < deadline) {
        await Promise.race([answered, new Promise((r) => ((nudge = () => r(undefined)), (timer = setTimeout(r, Math.min(REDELIVER_CHECK_MS, deadline - Date.now())))))]);
        clearTimeout(timer);
        // The answer is read from the row too: its NOTIFY may have been lost (the LISTEN connection was
        // reconnecting), and waiting for it would hold the requester, and a trigger delivery, to the timeout.
        if (!isAnswered && Date.now() < deadline) {
          isAnswered = await this.redeliver(requestId, name, holder).catch((err) => (this.log.warn('command redelivery check failed', { requestId, error: err instanceof Error ? err.message : String(err) }), false));
        }
      }
    } finally {
      clearTimeout(timer);
      this.waiters.delete(requestId);
      this.nudges.delete(requestId);
    }
    // An answered row is only read (no write, so no commit on the way back); an unanswered one times out.
    type Row = { status: string; result: unknown; error: { code: string; message: string } | null };
    let [row] = await this.db.query<Row>(sql`select status, result, error from runner_commands where request_id = ${requestId}`);
    if (row?.status === 'pending' || row?.status === 'sent') {
      [row] = await this.db.query<Row>(sql`
        update runner_commands set status = case when status in ('pending', 'sent') then 'timeout' else status end,
               finished_at = coalesce(finished_at, now())
         where request_id = ${requestId} returning status, result, error`);
    }
    if (row?.status === 'done') return { status: 'done', data: row.result };
    if (row?.status === 'failed') return { status: 'failed', error: row.error! };
    return { status: 'timeout' };
  }

  private holderOf(runnerId: string): Promise<string | null> {
    return this.db.query<{ connected_instance: string | null }>(sql`select connected_instance from runners where id = ${runnerId}`).then(
      ([r]) => r?.connected_instance ?? null,
      () => null,
    );
  }

  /**
   * While its requester waits, a command is not left behind by a socket that went away. Whichever process
   * sent it (or would have), and whichever build that process runs (a rolling upgrade mixes them):
   * still `pending` while the runner is connected somewhere → announced again, so its holder sends it;
   * `sent`, but the runner has since connected to another process (the socket that carried the command,
   * or would carry its answer, is gone) → put back to `pending` and announced, when sending it again
   * cannot make it run twice (read-only, or a runner with REPLAY_CAPABILITY).
   */
  private async redeliver(requestId: string, name: CommandName, holder: { instance: string | null }): Promise<boolean> {
    const before = holder.instance;
    const [row] = await this.db.query<{ status: string; instance: string | null; capabilities: string[] }>(sql`
      select c.status, r.connected_instance as instance, r.capabilities from runner_commands c join runners r on r.id = c.runner_id where c.request_id = ${requestId}`);
    if (!row) return false;
    if (row.status !== 'pending' && row.status !== 'sent') return true; // answered
    holder.instance = row.instance;
    if (!row.instance) return false; // nobody holds the runner: its hello (sendUnanswered) or a later check sends it
    if (row.status === 'pending') {
      await this.db.notify(CMD, requestId);
      return false;
    }
    if (row.instance === before) return false;
    if (!READ_ONLY_COMMANDS.has(name) && !(Array.isArray(row.capabilities) && row.capabilities.includes(REPLAY_CAPABILITY))) return false;
    const [back] = await this.db.query(sql`update runner_commands set status = 'pending' where request_id = ${requestId} and status = 'sent' returning 1`);
    if (back) await this.db.notify(CMD, requestId);
    return false;
  }

  /**
   * Commands still waiting for an answer when the runner (re)connects, sent now while their requester
   * still waits: `pending` ones were asked for while it had no socket anywhere (it was reconnecting: its
   * server process was restarted); `sent` ones may have been lost with the old socket, command or answer.
   * A `sent` one goes again only when that cannot make it run twice: a read-only command, or a runner that
   * answers a repeated requestId with its first answer (REPLAY_CAPABILITY). Called on hello, which carries
   * the runner's capabilities.
   */
  async sendUnanswered(conn: Conn, replay: boolean): Promise<void> {
    const rows = await this.db.query<{ request_id: string; name: CommandName; args: unknown; status: string; created_at: Date }>(sql`
      select request_id, name, args, status, created_at from runner_commands
       where runner_id = ${conn.runnerId} and status in ('pending', 'sent') and created_at > now() - interval '10 minutes'
       order by created_at`);
    for (const c of rows) {
      if (!COMMANDS[c.name] || Date.now() - +new Date(c.created_at) > COMMANDS[c.name].timeoutMs) continue;
      if (c.status === 'sent' && !replay && !READ_ONLY_COMMANDS.has(c.name)) continue;
      if (c.status === 'pending') {
        const [claimed] = await this.db.query(sql`update runner_commands set status = 'sent' where request_id = ${c.request_id} and status = 'pending' returning 1`);
        if (!claimed) continue;
      }
      this.sockets.send(conn, await this.frameOf(conn.runnerId, c.request_id, c.name, c.args));
    }
  }

  /** Missed `svc_runner_cmd`: commands still pending for runners held here are sent now. */
  private async sendPendingHeld(): Promise<void> {
    const held = this.sockets.heldIds();
    if (!held.length) return;
    const rows = await this.db.query<{ request_id: string }>(sql`
      select request_id from runner_commands where runner_id = any(${held}) and status = 'pending' and created_at > now() - interval '10 minutes' order by created_at`);
    for (const r of rows) await this.onCommand(r.request_id);
  }

  /** Every process hears every command; only the one holding the runner's socket sends it. */
  private async onCommand(requestId: string): Promise<void> {
    const [cmd] = await this.db.query<{ runner_id: string; name: CommandName; args: unknown }>(sql`
      select runner_id, name, args from runner_commands where request_id = ${requestId} and status = 'pending'`);
    const conn = cmd && this.sockets.get(cmd.runner_id);
    if (!conn) return;
    const [claimed] = await this.db.query(sql`update runner_commands set status = 'sent' where request_id = ${requestId} and status = 'pending' returning 1`);
    if (!claimed) return;
    this.sockets.send(conn, await this.frameOf(cmd.runner_id, requestId, cmd.name, cmd.args));
  }

  /** A runner's answer: stored (when its command still waits), and its requester woken wherever it waits. */
  async onResult(runnerId: string, frame: ResultFrame): Promise<void> {
    const update = sql`
      update runner_commands set status = ${frame.ok ? 'done' : 'failed'}, result = ${sql.json(frame.ok ? (frame.data ?? null) : null)},
             error = ${sql.json(frame.ok ? null : frame.error)}, finished_at = now()
       where request_id = ${frame.requestId} and runner_id = ${runnerId} and status = 'sent' returning request_id`;
    // Its requester waits here: woken directly. Elsewhere: the answer and its NOTIFY commit together.
    if (!this.waiters.has(frame.requestId)) return void (await this.db.query(sql`with a as (${update}) select pg_notify(${DONE}, request_id) from a`));
    const [row] = await this.db.query(update);
    if (row) this.waiters.get(frame.requestId)?.(); // none: unknown, or answered after its timeout
  }
}

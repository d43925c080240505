// The browser side of terminal.attach (spec: Server commands to a runner, `terminal.attach`, admin):
// `GET /api/terminal?projectId=…&session=…[&cols=…&rows=…]` upgraded to a WebSocket. The user is
// authenticated like the API (session cookie, or a Bearer token for scripts), must be admin on the
// project, and a browser must come from this server's own origin (no cross-site WebSocket). Every
// attach writes an audit record `terminal.attach`. The relay then carries, as JSON text messages:
//   browser → server: {type:"input", data}, {type:"resize", cols, rows}
//   server → browser: {type:"output", data}, {type:"exit", reason}, {type:"error", code, message}
// The runner's socket may be held by another server process (several replicas behind a load balancer):
// then the hub passes the frames through PostgreSQL NOTIFY (terminal-channels.ts).
import { randomBytes } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { WebSocketServer } from 'ws';
import type { WebSocket } from 'ws';
import * as z from 'zod';
import { COMMANDS } from '../../protocol/commands.ts';
import { MAX_TERM_DATA } from '../../protocol/frames.ts';
import { appendAudit } from '../audit/audit.ts';
import { requireProjectRole } from '../auth/auth.ts';
import { failSocket, upgradeCaller, upgradeThen } from '../auth/upgrade.ts';
import { tokenBucket } from '../../protocol/bucket.ts';
import type { AppContext } from '../lib/context.ts';
import { HttpError } from '../lib/errors.ts';
import { parseWith } from '../lib/http.ts';
import { projectRunner } from './queries.ts';

const query = z.strictObject({
  projectId: z.string().regex(/^[A-Za-z0-9_-]{1,64}$/),
  session: z.string().regex(/^[A-Za-z0-9_-]{1,128}$/),
  cols: z.coerce.number().int().min(2).max(1000).optional(),
  rows: z.coerce.number().int().min(2).max(1000).optional(),
});
const browserMessage = z.discriminatedUnion('type', [
  z.strictObject({ type: z.literal('input'), data: z.string().min(1).max(MAX_TERM_DATA) }),
  z.strictObject({ type: z.literal('resize'), cols: z.number().int().min(2).max(1000), rows: z.number().int().min(2).max(1000) }),
]);
/** Messages a browser may send per second (typing and pasting stay far below). */
const INPUT_RATE = 200;

/** Close codes besides those of auth/upgrade.ts: 4409 the runner refused, 4503 the runner is offline. */

export class TerminalRelay {
  private readonly wss = new WebSocketServer({ noServer: true, maxPayload: 2 * MAX_TERM_DATA });

  constructor(private readonly ctx: AppContext) {}

  handleUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void {
    upgradeThen(this.ctx, this.wss, 'terminal', req, socket, head, (ws, r) => this.accept(ws, r));
  }

  private fail(ws: WebSocket, code: string, message: string, close: number): void {
    failSocket(ws, code, message, close);
  }

  private async accept(ws: WebSocket, req: IncomingMessage): Promise<void> {
    // Listen at once: a message that arrives while this checks the caller (the awaits below) would
    // otherwise be emitted with no listener and lost. Keys typed before the runner has attached are kept
    // (at most 1000 messages) and sent, in order, once it has.
    let forward: ((msg: z.infer<typeof browserMessage>) => void) | null = null;
    const early: z.infer<typeof browserMessage>[] = [];
    const bucket = tokenBucket(INPUT_RATE, INPUT_RATE);
    ws.on('message', (data, isBinary) => {
      if (!bucket.take()) return;
      let msg: z.infer<typeof browserMessage>;
      try {
        const r = browserMessage.safeParse(isBinary ? null : JSON.parse(data.toString()));
        if (!r.success) return;
        msg = r.data;
      } catch {
        return;
      }
      if (forward) forward(msg);
      else if (early.length < 1000) early.push(msg);
    });
    const { principal, url } = await upgradeCaller(this.ctx, req, 'terminal');
    const { projectId, session, cols, rows } = parseWith(query, Object.fromEntries(url.searchParams), 'invalid_query');
    await requireProjectRole(this.ctx.db, principal, projectId, COMMANDS['terminal.attach'].minRole);
    const runnerId = await projectRunner(this.ctx.db, projectId);
    if (!runnerId) throw new HttpError(409, 'no_runner', 'this project has no runner');
    if (!(await this.ctx.hub.isOnline(runnerId))) return this.fail(ws, 'runner_offline', 'the runner of this project is offline', 4503);

    const channel = randomBytes(12).toString('base64url');
    const close = this.ctx.hub.openTerminal(runnerId, channel, (frame) => {
      if (ws.readyState !== ws.OPEN) return;
      if (frame.type === 'term.output') ws.send(JSON.stringify({ type: 'output', data: frame.data }));
      else {
        ws.send(JSON.stringify({ type: 'exit', reason: frame.reason }));
        ws.close(1000, 'terminal closed');
      }
    });
    let attached = false;
    const send = (msg: z.infer<typeof browserMessage>) => {
      if (msg.type === 'input') this.ctx.hub.sendTerminal(runnerId, { type: 'term.input', channel, data: msg.data });
      else this.ctx.hub.sendTerminal(runnerId, { type: 'term.resize', channel, cols: msg.cols, rows: msg.rows });
    };
    ws.on('close', () => {
      close();
      if (attached) this.ctx.hub.sendTerminal(runnerId, { type: 'term.close', channel });
    });
    await this.ctx.db.transaction((tx) =>
      appendAudit(tx, { actor: principal, action: 'terminal.attach', target: { type: 'project', id: projectId }, diff: { session, runnerId }, requestId: `term-${channel}` }),
    );
    const outcome = await this.ctx.hub.command(runnerId, 'terminal.attach', { projectId, session, channel, cols, rows }, principal.user.id);
    if (outcome.status !== 'done') {
      close();
      if (outcome.status === 'offline') return this.fail(ws, 'runner_offline', 'the runner of this project is offline', 4503);
      const error = outcome.status === 'failed' ? outcome.error : { code: 'command_timeout', message: `terminal.attach: ${outcome.status}` };
      return this.fail(ws, error.code, error.message, 4409);
    }
    attached = true;
    if (ws.readyState !== ws.OPEN) return void this.ctx.hub.sendTerminal(runnerId, { type: 'term.close', channel });
    for (const msg of early.splice(0)) send(msg);
    forward = send;
  }
}

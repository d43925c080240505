// Writing a live notice (docs/operations.md, "Live updates"; protocol/live.ts): publish() is a `pg_notify`
// on the channel `svc_live` in the writer's own transaction where it has one, so it is sent only when the
// change commits, and every API process hears it. The socket server that hands notices to the browsers
// allowed to read them is live.ts; writers import only this file, not the socket server and auth/.
import type { LiveNotice } from '../../protocol/live.ts';
import type { Role } from '../lib/context.ts';
import { sql } from '../lib/db/index.ts';
import type { Queryable } from '../lib/db/index.ts';

export const LIVE_CHANNEL = 'svc_live';
/** NOTIFY payloads are limited to 8000 bytes; notices are far smaller, this keeps a margin. */
const MAX_PAYLOAD = 7000;

export type Audience =
  | { admins: true }
  | { projectId: string; minRole?: Role }
  | { runnerId: string; minRole?: Role }
  | { userId: string };

export type Envelope =
  | { to: Audience; n: Exclude<LiveNotice, { type: 'ready' | 'error' }> }
  // The two control envelopes are sent by triggers (sql/0016_live_access.sql), whatever code made the change:
  /** Re-check the matching sockets now (sign-out, deactivation, token revoked, admin flag changed). */
  | { revalidate: { userId?: string; sessionId?: string; tokenId?: string } }
  /** Project membership or a project's runner changed: forget cached roles. */
  | { access: true };

async function send(q: Queryable, e: Envelope): Promise<void> {
  let payload = JSON.stringify(e);
  if (payload.length > MAX_PAYLOAD && 'n' in e) {
    const { type, projectId, id } = e.n as { type: string; projectId?: string; id?: string };
    payload = JSON.stringify({ to: e.to, n: { type, projectId, id } });
  }
  await q.query(sql`select pg_notify(${LIVE_CHANNEL}, ${payload})`);
}

/** Tell the live sockets allowed to see it that something changed (on commit, when `q` is a transaction). */
export const publish = (q: Queryable, notice: Extract<Envelope, { n: unknown }>['n'], to: Audience) => send(q, { to, n: notice });

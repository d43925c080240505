// The live connection `GET /api/live` (WebSocket; docs/operations.md, "Live updates"): what the server
// sends and the close codes, shared by the server (functions/live/live.ts) and the pages
// (web-static/live.ts). Notices are small change signals, not data: a page that gets one re-fetches
// what it shows through the ordinary API, which applies the same rights again.

/** A change notice. `projectId` names the project it concerns (when there is one), `id` the thing. */
export type LiveNotice =
  /** A runner's socket was opened or closed (Runners page: online / offline). */
  | { type: 'runner'; id: string; online: boolean }
  /** A skill run was recorded or moved to a new state. */
  | { type: 'run'; projectId: string; id: string; state: string }
  /** New progress lines (or a patch) of a running skill run. */
  | { type: 'run.progress'; projectId: string; id: string; lines?: number }
  /**
   * A project was created, changed (name, repository, runner, budget) or deleted, or its members or their
   * roles changed (`members`), or its runner pool (`pool`). Sent to the project's members and instance admins; a member removed from
   * it, or the members of a deleted project, get it too (their list loses the project).
   */
  | { type: 'project'; projectId: string; change: 'created' | 'updated' | 'deleted' | 'members' | 'pool' }
  /** An orchestrator or slot event of a project (fleet state): `kind` is the event's name. */
  | { type: 'fleet'; projectId: string; kind: string }
  /** An outbound webhook's delivery state: its circuit moved (closed, open, half-open). */
  | { type: 'webhook'; id: string; circuit: 'closed' | 'open' | 'half-open' }
  /** A notification the user may read was stored (`id`), or the user marked some read. */
  | { type: 'notification'; id: string; projectId?: string; kind: string }
  | { type: 'notification.read' }
  /** An audit chain verification finished (instance admins only). */
  | { type: 'audit.verification'; id: string; ok: boolean }
  /** Sent once the connection is authenticated and subscribed: from here on nothing is missed. */
  | { type: 'ready'; userId: string }
  /** Sent before the server closes the connection with one of LIVE_CLOSE's codes. */
  | { type: 'error'; code: string; message: string };

export type LiveNoticeType = LiveNotice['type'];

/** Close codes of /api/live (besides 1000/1001/1006). A page reconnects on all but `unauthorized`. */
export const LIVE_CLOSE = {
  /** Bad request (e.g. the query). */
  badRequest: 4400,
  /** Not signed in, or the session / token ended (sign-out, expiry, deactivation): sign in again. */
  unauthorized: 4401,
  /** The page's Origin is not this server's. */
  forbidden: 4403,
  /** The client read too slowly: its send buffer passed the bound; reconnect and re-fetch. */
  tooSlow: 4408,
  /** The user already holds LIVE_MAX_SOCKETS_PER_USER live sockets on this server process (close one). */
  tooMany: 4429,
} as const;

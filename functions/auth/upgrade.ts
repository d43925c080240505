// What every browser-facing WebSocket of the admin API shares (/api/terminal, /api/live): the caller
// is authenticated like the API (session cookie, or a Bearer personal API token for scripts), and a
// browser must come from this server's own origin — a cookie is sent on a cross-site WebSocket too, so
// without the Origin check any site could open one in a signed-in user's name. Failures are reported
// after the upgrade, as an `{type:"error", code, message}` message and a 44xx close code, because a
// browser never sees the HTTP status of a refused upgrade.
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import type { WebSocket, WebSocketServer } from 'ws';
import type { AppContext, Principal } from '../lib/context.ts';
import { HttpError } from '../lib/errors.ts';
import { authenticate, unauthorized } from './auth.ts';

/** Close codes the browser sees: 4400 bad request, 4401 not signed in, 4403 not allowed, 4404 not found. */
export const closeFor = (status: number) => (status === 401 ? 4401 : status === 403 ? 4403 : status === 404 ? 4404 : 4400);

/** Send the error message and close with `close` (a no-op when the socket is already closing). */
export function failSocket(ws: WebSocket, code: string, message: string, close: number): void {
  if (ws.readyState !== ws.OPEN) return;
  ws.send(JSON.stringify({ type: 'error', code, message }));
  ws.close(close, code.slice(0, 100));
}

/**
 * Upgrade, then run `accept`; an HttpError it throws closes the socket with the matching code, any
 * other error is logged and closes with 4400 and a generic message (`what` names the endpoint).
 */
export function upgradeThen(
  ctx: Pick<AppContext, 'log'>,
  wss: WebSocketServer,
  what: string,
  req: IncomingMessage,
  socket: Duplex,
  head: Buffer,
  accept: (ws: WebSocket, req: IncomingMessage) => Promise<void>,
): void {
  wss.handleUpgrade(req, socket, head, (ws) =>
    accept(ws, req).catch((err) => {
      const status = err instanceof HttpError ? err.status : 500;
      if (status >= 500) ctx.log.error(`${what} failed`, { error: err instanceof Error ? err.message : String(err) });
      failSocket(ws, err instanceof HttpError ? err.code : 'server_error', err instanceof HttpError ? err.message : `the ${what} could not be opened`, closeFor(status));
    }),
  );
}

/**
 * The Origin check and authentication of an upgrade request: 403 `bad_origin` when a browser's Origin is
 * not this server's (its Host, either scheme, or PUBLIC_URL's origin); 401 when nobody is signed in.
 * Returns the caller and the request URL (for its query).
 */
export async function upgradeCaller(ctx: AppContext, req: IncomingMessage, what: string): Promise<{ principal: Principal; url: URL }> {
  const host = req.headers.host ?? '';
  const origin = req.headers.origin;
  const allowedOrigins = new Set([`http://${host}`, `https://${host}`]);
  if (ctx.config.PUBLIC_URL) allowedOrigins.add(new URL(ctx.config.PUBLIC_URL).origin);
  if (origin !== undefined && !allowedOrigins.has(origin)) throw new HttpError(403, 'bad_origin', `a ${what} may only be opened from this server's own pages`);
  const url = new URL(req.url ?? '/', `http://${host || 'localhost'}`);
  const request = new Request(url, { headers: Object.entries(req.headers).flatMap(([k, v]) => (typeof v === 'string' ? [[k, v] as [string, string]] : [])) });
  const principal = await authenticate(ctx, request);
  if (!principal) throw unauthorized();
  return { principal, url };
}

// The admin socket: how `admin create | password-link` reach a server that holds the embedded database.
// PGlite is one process's database (lib/db/pglite.ts, svc.lock), so while the server runs the CLI cannot
// open it; instead the server serves `svc.sock` in the data directory and runs the command for the CLI
// (functions/admin-action.ts, audited as the CLI). Only with PGlite: on PostgreSQL the CLI uses the database.
//
// Who may use it: the data directory is made owner-only (0700) and the socket 0600, so only the account
// the server runs as (and root) can connect — the same people who could stop the server and run the CLI
// on the database files. The protocol is one HTTP request per command: POST / with
// {command, email, name, url}, answered {url} or {error}. The socket is removed when the server stops;
// one left by a process that died is replaced at the next start (that process holds svc.lock then).
import { chmodSync, rmSync } from 'node:fs';
import { createServer, request } from 'node:http';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { join, resolve } from 'node:path';
import * as z from 'zod';
import { adminAction, adminRequest } from './admin-action.ts';
import type { AdminRequest } from './admin-action.ts';
import { publicUrl } from './lib/config.ts';
import type { Config } from './lib/config.ts';
import type { Db } from './lib/db/index.ts';
import type { Logger } from './lib/log.ts';

const BODY_LIMIT = 16 * 1024;
const socketRequest = adminRequest.extend({ url: publicUrl.nullable() });

/** Where the socket is, or null when the server keeps no files (no PGlite, or PGlite in memory). */
export function adminSocketPath(config: Pick<Config, 'DATABASE_DRIVER' | 'PGLITE_DATA_DIR'>): string | null {
  if (config.DATABASE_DRIVER !== 'pglite' || config.PGLITE_DATA_DIR.startsWith('memory://')) return null;
  return join(resolve(config.PGLITE_DATA_DIR), 'svc.sock');
}

function answer(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
}

async function readJson(req: IncomingMessage): Promise<unknown> {
  let text = '';
  for await (const chunk of req) {
    text += chunk;
    if (text.length > BODY_LIMIT) throw new Error('request too large');
  }
  return JSON.parse(text);
}

/**
 * Serve the admin socket while this process holds the embedded database; `base` is where links point
 * unless the CLI names one. Answers the function that closes it (a no-op when there is none).
 */
export async function serveAdminSocket(opts: { config: Config; db: Db; log: Logger; base: string }): Promise<() => Promise<void>> {
  const path = adminSocketPath(opts.config);
  if (!path) return async () => {};
  const log = opts.log.child({ area: 'admin-socket' });
  const server = createServer((req, res) => {
    void (async () => {
      try {
        const parsed = socketRequest.safeParse(await readJson(req));
        if (!parsed.success) return answer(res, 400, { error: `bad request: ${parsed.error.issues.map((i) => `${i.path.join('.')} ${i.message}`).join('; ')}` });
        const { url, ...command } = parsed.data;
        const done = await adminAction(opts.db, command, url ?? opts.base);
        log.info('admin command run for the CLI', { command: command.command, email: command.email });
        answer(res, 200, { url: done.url });
      } catch (err) {
        answer(res, 400, { error: err instanceof Error ? err.message : String(err) });
      }
    })();
  });
  try {
    chmodSync(resolve(opts.config.PGLITE_DATA_DIR), 0o700); // owner-only: see the header
    rmSync(path, { force: true });
    await new Promise<void>((ok, fail) => {
      server.once('error', fail);
      server.listen(path, () => ok());
    });
    chmodSync(path, 0o600);
  } catch (err) {
    server.close();
    log.warn('no admin socket: `admin create` and `admin password-link` need this server stopped', { path, error: err instanceof Error ? err.message : String(err) });
    return async () => {};
  }
  return () => new Promise<void>((ok) => server.close(() => (rmSync(path, { force: true }), ok())));
}

/**
 * Run an admin command in the server that holds the embedded database. Null when no server answers on
 * the socket (none runs, or one died and left the file): the CLI then opens the database itself.
 */
export function callAdminSocket(path: string, body: AdminRequest & { url: string | null }): Promise<{ url: string } | null> {
  return new Promise((ok, fail) => {
    const req = request({ socketPath: path, method: 'POST', path: '/', headers: { 'content-type': 'application/json' }, timeout: 60_000 }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (text += c));
      res.on('end', () => {
        let body: unknown = null;
        try {
          body = JSON.parse(text);
        } catch {}
        const parsed = z.object({ url: z.string() }).or(z.object({ error: z.string() })).safeParse(body);
        if (!parsed.success) return fail(new Error(`the server answered on ${path} with something unexpected (status ${res.statusCode})`));
        if ('error' in parsed.data) return fail(new Error(parsed.data.error));
        ok(parsed.data);
      });
    });
    req.on('timeout', () => req.destroy(new Error(`the server did not answer on ${path} within 60 s`)));
    req.on('error', (err: NodeJS.ErrnoException) => (err.code === 'ENOENT' || err.code === 'ECONNREFUSED' ? ok(null) : fail(err)));
    req.end(JSON.stringify(body));
  });
}

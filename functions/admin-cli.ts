// `node dist/server.mjs admin create | password-link` (see functions/server.ts): loaded only for these
// commands, so a server start does not compile what they import.
import mri from 'mri';
import { adminAction } from './admin-action.ts';
import type { AdminRequest } from './admin-action.ts';
import { adminSocketPath, callAdminSocket } from './admin-socket.ts';
import { useAuditKey } from './audit/audit.ts';
import { auditMacKey } from './audit/mac.ts';
import { publicUrl } from './lib/config.ts';
import type { Config } from './lib/config.ts';
import type { Db } from './lib/db/index.ts';
import { resolveEncryptionKey } from './lib/keyfile.ts';
import { createLogger } from './lib/log.ts';
import type { Logger } from './lib/log.ts';
import { configuredBase, isLoopback } from './lib/urls.ts';

type PrepareDatabase = (config: Config, log: Logger) => Promise<Db>;

/** A CLI mistake: the message and exit code 2, no stack and no "start failed". */
class UsageError extends Error {}

const LINK_FIX = 'pass --url <base URL> or set PUBLIC_URL to the address people open';

/** A warning when only this machine can open a link under `base`. */
function loopbackWarning(base: string): string | null {
  const { hostname, port } = new URL(base);
  return isLoopback(hostname) ? `this link uses ${hostname}${port ? `:${port}` : ''}, a loopback address: it opens only on this machine; ${LINK_FIX}` : null;
}

/** Where the printed link points (see lib/urls.ts), and whether --url or PUBLIC_URL named it; a warning when only this machine can open it. */
function cliLinkBase(config: Config, url: unknown): { base: string; named: boolean; warning: string | null } {
  let base: string;
  if (url !== undefined) {
    const parsed = publicUrl.safeParse(typeof url === 'string' ? url : '');
    if (!parsed.success) throw new UsageError(`--url ${parsed.error.issues[0].message}`);
    base = parsed.data;
  } else {
    base = configuredBase(config);
  }
  const named = url !== undefined || Boolean(config.PUBLIC_URL);
  if (!named && config.PORT === 0) return { base, named, warning: `PORT=0 lets the server pick a free port at start, so this link has no usable port: ${LINK_FIX}` };
  return { base, named, warning: loopbackWarning(base) };
}

/** The command run by this process on the database (PostgreSQL, or an embedded one no server holds). */
async function runHere(config: Config, log: Logger, request: AdminRequest, base: string, prepareDatabase: PrepareDatabase): Promise<string> {
  const db = await prepareDatabase(config, log);
  // The same key the server uses (the environment's, or the embedded database's key file once the server
  // made it), so records the CLI appends carry the audit MAC like the server's. Its warnings are the server's to give.
  const quietLog = createLogger('error');
  useAuditKey(auditMacKey(resolveEncryptionKey(config, quietLog, { create: false }).key));
  try {
    return (await adminAction(db, request, base)).url;
  } finally {
    await db.close();
  }
}

/** Bootstrap and recovery from the command line: the first admin, or a lost password. */
async function adminCommand(config: Config, log: Logger, argv: string[], usage: string, prepareDatabase: PrepareDatabase): Promise<number> {
  const args = mri(argv, { string: ['email', 'name', 'url'] });
  const sub = args._[0];
  const email = typeof args.email === 'string' ? args.email.trim().toLowerCase() : '';
  if ((sub !== 'create' && sub !== 'password-link') || !/^[^@\s]+@[^@\s]+$/.test(email)) {
    process.stderr.write(usage);
    return 2;
  }
  const { base, named, warning } = cliLinkBase(config, args.url);
  const request: AdminRequest = { command: sub, email, name: typeof args.name === 'string' ? args.name : null };
  // A server holding the embedded database runs the command for us (functions/admin-socket.ts); it knows
  // the port it listens on, so without --url or PUBLIC_URL the link uses its address.
  const socket = adminSocketPath(config);
  const viaServer = socket ? await callAdminSocket(socket, { ...request, url: named ? base : null }) : null;
  const url = viaServer ? viaServer.url : await runHere(config, log, request, base, prepareDatabase);
  const shownWarning = viaServer ? loopbackWarning(url.split('#')[0]) : warning;
  process.stdout.write(`${sub === 'create' ? 'Created instance admin' : 'Password link for'} ${email}.\nSet the password within 24 hours at:\n${url}\n`);
  if (shownWarning) process.stderr.write(`admin: warning: ${shownWarning}\n`);
  return 0;
}

/** The admin command with its errors on stderr: exit 2 for a usage mistake, 1 for anything else. */
export async function runAdmin(config: Config, log: Logger, argv: string[], usage: string, prepareDatabase: PrepareDatabase): Promise<number> {
  try {
    return await adminCommand(config, log, argv, usage, prepareDatabase);
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    process.stderr.write(`${err instanceof UsageError ? usage : ''}admin: ${message}\n`);
    return err instanceof UsageError ? 2 : 1;
  }
}

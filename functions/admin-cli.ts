// `node dist/server.mjs admin create | password-link` (see functions/server.ts): loaded only for these
// commands, so a server start does not compile what they import.
import mri from 'mri';
import { audited, useAuditKey } from './audit/audit.ts';
import { auditMacKey } from './audit/mac.ts';
import { createPasswordLink, createUser } from './auth/routes.ts';
import { publicUrl } from './lib/config.ts';
import type { Config } from './lib/config.ts';
import { sql } from './lib/db/index.ts';
import type { Db } from './lib/db/index.ts';
import { resolveEncryptionKey } from './lib/keyfile.ts';
import { createLogger } from './lib/log.ts';
import type { Logger } from './lib/log.ts';
import { configuredBase, isLoopback } from './lib/urls.ts';

type PrepareDatabase = (config: Config, log: Logger) => Promise<Db>;

/** A CLI mistake: the message and exit code 2, no stack and no "start failed". */
class UsageError extends Error {}

/** Where the printed link points (see lib/urls.ts), and a warning when only this machine can open it. */
function cliLinkBase(config: Config, url: unknown): { base: string; warning: string | null } {
  let base: string;
  if (url !== undefined) {
    const parsed = publicUrl.safeParse(typeof url === 'string' ? url : '');
    if (!parsed.success) throw new UsageError(`--url ${parsed.error.issues[0].message}`);
    base = parsed.data;
  } else {
    base = configuredBase(config);
  }
  const { hostname, port } = new URL(base);
  const fix = 'pass --url <base URL> or set PUBLIC_URL to the address people open';
  if (url === undefined && !config.PUBLIC_URL && config.PORT === 0) return { base, warning: `PORT=0 lets the server pick a free port at start, so this link has no usable port: ${fix}` };
  if (isLoopback(hostname)) return { base, warning: `this link uses ${hostname}${port ? `:${port}` : ''}, a loopback address: it opens only on this machine; ${fix}` };
  return { base, warning: null };
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
  const { base, warning } = cliLinkBase(config, args.url);
  const db = await prepareDatabase(config, log);
  // The same key the server uses (the environment's, or the embedded database's key file once the server
  // made it), so records the CLI appends carry the audit MAC like the server's. Its warnings are the server's to give.
  const quietLog = createLogger('error');
  useAuditKey(auditMacKey(resolveEncryptionKey(config, quietLog, { create: false }).key));
  try {
    const link = await audited(
      db,
      (r: { userId: string }) => ({ actor: { label: 'cli' }, action: sub === 'create' ? 'user.create' : 'user.password_link', target: { type: 'user', id: r.userId }, diff: sub === 'create' ? { after: { email, instanceAdmin: true } } : null }),
      async (tx) => {
        let userId: string;
        if (sub === 'create') {
          const name = (typeof args.name === 'string' ? args.name.trim() : '') || email.split('@')[0];
          userId = (await createUser(tx, { email, name, instanceAdmin: true })).id;
        } else {
          const [u] = await tx.query<{ id: string }>(sql`select id from users where lower(email) = ${email}`);
          if (!u) throw new Error(`no user with e-mail ${email}`);
          userId = u.id;
        }
        return { userId, ...(await createPasswordLink(tx, base, userId)) };
      },
    );
    process.stdout.write(`${sub === 'create' ? 'Created instance admin' : 'Password link for'} ${email}.\nSet the password within 24 hours at:\n${link.url}\n`);
    if (warning) process.stderr.write(`admin: warning: ${warning}\n`);
    return 0;
  } finally {
    await db.close();
  }
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

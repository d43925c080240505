// What `admin create | password-link` do to the database, audited as the CLI: run by the CLI itself on
// PostgreSQL (or on an embedded database no server holds), and by the server for the CLI over the admin
// socket when the server holds the embedded database (functions/admin-socket.ts).
import * as z from 'zod';
import { audited } from './audit/audit.ts';
import { createPasswordLink, createUser } from './auth/queries.ts';
import { sql } from './lib/db/index.ts';
import type { Db } from './lib/db/index.ts';

export const adminRequest = z.strictObject({
  command: z.enum(['create', 'password-link']),
  email: z.string().min(3).max(254),
  name: z.string().max(200).nullable(),
});
export type AdminRequest = z.infer<typeof adminRequest>;

/** Creates the instance admin (or finds the user) and a one-time password link under `base`. */
export async function adminAction(db: Db, req: AdminRequest, base: string): Promise<{ userId: string; url: string }> {
  const { command, email } = req;
  return audited(
    db,
    (r: { userId: string }) => ({ actor: { label: 'cli' }, action: command === 'create' ? 'user.create' : 'user.password_link', target: { type: 'user', id: r.userId }, diff: command === 'create' ? { after: { email, instanceAdmin: true } } : null }),
    async (tx) => {
      let userId: string;
      if (command === 'create') {
        userId = (await createUser(tx, { email, name: req.name?.trim() || email.split('@')[0], instanceAdmin: true })).id;
      } else {
        const [u] = await tx.query<{ id: string }>(sql`select id from users where lower(email) = ${email}`);
        if (!u) throw new Error(`no user with e-mail ${email}`);
        userId = u.id;
      }
      return { userId, url: (await createPasswordLink(tx, base, userId)).url };
    },
  );
}

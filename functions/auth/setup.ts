// The first admin, made in the browser (issue 34, item 2): while no user exists, every server process
// logs a one-time setup link `<base>/#/setup?token=…` at start and again every 10 minutes until an
// admin exists (a new token at each start, and whenever the current one has less than 10 minutes left;
// each is valid 1 hour). The setup page posts the token with the admin's name, e-mail and password.
//
// Only the token's SHA-256 is stored, in `setup_tokens` (sql/0023): with several replicas each logs its
// own link and any replica accepts it. The plain token is in this process's memory (to log the same
// link again) and in that one log line, nowhere else. The check compares the hashes of the live tokens
// in constant time; the creation runs in one transaction under an advisory lock, so two setups at once
// make exactly one admin (the other gets 409).
import * as z from 'zod';
import { setupDone, setupState } from '../../protocol/api/auth.ts';
import { audited } from '../audit/audit.ts';
import { route } from '../lib/context.ts';
import type { Route } from '../lib/context.ts';
import { constantTimeEqual, randomToken, sha256Hex } from '../lib/crypto.ts';
import type { Db, Queryable } from '../lib/db/index.ts';
import { HttpError, conflict, json } from '../lib/errors.ts';
import type { Logger } from '../lib/log.ts';
import { hashPassword } from './passwords.ts';
import { checkAddressAllowed, recordAddressFailure } from './ratelimit.ts';
import { adminExists, advisoryXactLock, createUser, finishSetup, liveSetupTokenHashes, storeSetupToken } from './queries.ts';
import { email, name, password } from './routes.ts';

export const SETUP_TOKEN_MS = 3600_000;
export const SETUP_REMINDER_MS = 10 * 60_000;
/** pg_advisory_xact_lock key serializing first-admin setups (migrations use 4_242_001). */
const SETUP_LOCK_KEY = 4_242_034;

/** The hash of the live (unexpired) setup token that equals `token`, compared in constant time; null if none. */
async function matchingToken(db: Queryable, token: string): Promise<string | null> {
  const wanted = sha256Hex(token);
  const live = await liveSetupTokenHashes(db);
  let found: string | null = null;
  for (const { token_hash } of live) if (constantTimeEqual(token_hash, wanted)) found = token_hash;
  return found;
}

const wrongToken = () => new HttpError(401, 'invalid_setup_token', 'this setup link is wrong, used or expired: open the newest setup link printed in the server\'s log');
const alreadySetUp = () => conflict('setup_done', 'an admin exists already: sign in, or ask an admin for an invitation');

/** Logs the setup link while no user exists; see the header. Stop it with the function it answers. */
export function announceSetup(opts: { db: Db; log: Logger; base: string; now?: () => number; reminderMs?: number }): () => void {
  const now = opts.now ?? Date.now;
  const reminderMs = opts.reminderMs ?? SETUP_REMINDER_MS;
  let current: { token: string; expiresAt: number } | null = null;
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;
  const tick = async () => {
    if (await adminExists(opts.db)) return false;
    if (!current || current.expiresAt - now() < reminderMs) {
      const token = randomToken(32);
      const expiresAt = now() + SETUP_TOKEN_MS;
      await storeSetupToken(opts.db, token, new Date(expiresAt));
      current = { token, expiresAt };
    }
    // The one line that holds the token: the link is in the message, so it copies as it is.
    const url = `${opts.base.replace(/\/+$/, '')}/#/setup?token=${current.token}`;
    opts.log.warn(`no admin yet: open ${url} to create the first admin (one use)`, { expiresAt: new Date(current.expiresAt).toISOString() });
    return true;
  };
  const loop = () =>
    tick().then(
      (again) => {
        if (again && !stopped) timer = setTimeout(loop, reminderMs).unref();
      },
      (err) => {
        if (stopped) return; // the database closed under a reminder at shutdown
        opts.log.error('the setup link could not be made; trying again', { inSeconds: reminderMs / 1000, error: err instanceof Error ? err.message : String(err) });
        timer = setTimeout(loop, reminderMs).unref();
      },
    );
  void loop();
  return () => {
    stopped = true;
    clearTimeout(timer);
  };
}

// The same fields, and so the same rules, as inviting a user and setting a password (auth/routes.ts).
const setupBody = z.strictObject({
  token: z.string().min(1, { message: 'must be the token of the setup link' }).max(200),
  name,
  email,
  password,
});

export const routes: Route[] = [
  route({ method: 'GET', path: '/api/setup', tag: 'auth', access: 'public',
    summary: 'Whether the instance still needs its first admin (no user exists); says nothing else',
    responses: { 200: { description: 'Setup state', schema: setupState } },
    async handler(_input, ctx) {
      return json({ needed: !(await adminExists(ctx.db)) }, { headers: { 'cache-control': 'no-store' } });
    },
  }),
  route({ method: 'POST', path: '/api/setup', tag: 'auth', access: 'public', status: 201,
    summary: 'Create the first instance admin with the one-time token of the setup link in the server\'s log; 409 once any user exists',
    body: setupBody,
    responses: { 201: { description: 'The first instance admin; sign in with the e-mail and password', schema: setupDone } },
    bodyLimit: 16 * 1024,
    async handler({ body, requestId, clientAddress }, ctx) {
      await checkAddressAllowed(ctx.db, clientAddress);
      // Cheap refusals first, so a wrong token costs no password hashing; checked again under the lock.
      if (await adminExists(ctx.db)) throw alreadySetUp();
      if (!(await matchingToken(ctx.db, body.token))) {
        await recordAddressFailure(ctx.db, clientAddress);
        throw wrongToken();
      }
      const passwordHash = await hashPassword(body.password);
      const user = await audited(
        ctx.db,
        (u: { id: string }) => ({ actor: { label: 'setup-link' }, action: 'user.create', target: { type: 'user', id: u.id }, diff: { after: { email: body.email, name: body.name, instanceAdmin: true } }, requestId }),
        async (tx) => {
          await advisoryXactLock(tx, SETUP_LOCK_KEY);
          if (await adminExists(tx)) throw alreadySetUp();
          const hash = await matchingToken(tx, body.token);
          if (!hash) throw wrongToken();
          const made = await createUser(tx, { email: body.email, name: body.name, instanceAdmin: true });
          await finishSetup(tx, made.id, passwordHash);
          return made;
        },
      );
      return json({ user }, { status: 201, headers: { 'cache-control': 'no-store' } });
    },
  }),
];

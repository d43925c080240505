// Sign-in rate limits, kept in the database so they hold across replicas and restarts:
// at most 5 failures per account and 20 per client address in a sliding 15 minutes; then 429.
// A wrong setup token (functions/auth/setup.ts) counts against the same per-address limit.
import { sql } from '../lib/db/index.ts';
import type { Db } from '../lib/db/index.ts';
import { HttpError } from '../lib/errors.ts';

export const WINDOW_MINUTES = 15;
export const LIMITS = { account: 5, address: 20 };

const keys = (email: string, address: string) => ({ account: `account:${email.toLowerCase()}`, address: `address:${address}` });

/** 429 when any of these keys has reached its limit of failures in the window. */
async function checkLimits(db: Db, limits: Record<string, number>, what: string): Promise<void> {
  const rows = await db.query<{ key: string; n: number; oldest: Date }>(sql`
    select key, count(*)::int as n, min(at) as oldest from auth_failures
     where key = any(${Object.keys(limits)}) and at > now() - make_interval(mins => ${WINDOW_MINUTES})
     group by key`);
  for (const r of rows) {
    if (r.n >= limits[r.key]) {
      const retry = Math.max(1, Math.ceil((new Date(r.oldest).getTime() + WINDOW_MINUTES * 60_000 - Date.now()) / 1000));
      throw new HttpError(429, 'too_many_attempts', `too many ${what}; try again in ${retry} s`, undefined, { 'retry-after': String(retry) });
    }
  }
}

async function recordFailures(db: Db, failed: string[]): Promise<void> {
  await db.query(sql`insert into auth_failures (key) select unnest(${failed}::text[])`);
  // Keep the table small: forget failures older than the window (cheap with the (key, at) index).
  await db.query(sql`delete from auth_failures where at < now() - make_interval(mins => ${WINDOW_MINUTES * 2})`);
}

export async function checkSignInAllowed(db: Db, email: string, address: string): Promise<void> {
  const k = keys(email, address);
  await checkLimits(db, { [k.account]: LIMITS.account, [k.address]: LIMITS.address }, 'failed sign-ins');
}

export async function recordSignInFailure(db: Db, email: string, address: string): Promise<void> {
  const k = keys(email, address);
  await recordFailures(db, [k.account, k.address]);
}

/** Only the per-address limit (a door without an account: the setup link). */
export async function checkAddressAllowed(db: Db, address: string): Promise<void> {
  await checkLimits(db, { [keys('', address).address]: LIMITS.address }, 'failed attempts');
}

export async function recordAddressFailure(db: Db, address: string): Promise<void> {
  await recordFailures(db, [keys('', address).address]);
}

export async function clearAccountFailures(db: Db, email: string): Promise<void> {
  await db.query(sql`delete from auth_failures where key = ${keys(email, '').account}`);
}

// Sign-in rate limits, kept in the database so they hold across replicas and restarts:
// at most 5 failures per account and 20 per client address in a sliding 15 minutes; then 429.
import { sql } from '../lib/db/index.ts';
import type { Db } from '../lib/db/index.ts';
import { HttpError } from '../lib/errors.ts';

export const WINDOW_MINUTES = 15;
export const LIMITS = { account: 5, address: 20 };

const keys = (email: string, address: string) => ({ account: `account:${email.toLowerCase()}`, address: `address:${address}` });

export async function checkSignInAllowed(db: Db, email: string, address: string): Promise<void> {
  const k = keys(email, address);
  const rows = await db.query<{ key: string; n: number; oldest: Date }>(sql`
    select key, count(*)::int as n, min(at) as oldest from auth_failures
     where key = any(${[k.account, k.address]}) and at > now() - make_interval(mins => ${WINDOW_MINUTES})
     group by key`);
  for (const r of rows) {
    const limit = r.key === k.account ? LIMITS.account : LIMITS.address;
    if (r.n >= limit) {
      const retry = Math.max(1, Math.ceil((new Date(r.oldest).getTime() + WINDOW_MINUTES * 60_000 - Date.now()) / 1000));
      throw new HttpError(429, 'too_many_attempts', `too many failed sign-ins; try again in ${retry} s`, undefined, { 'retry-after': String(retry) });
    }
  }
}

export async function recordSignInFailure(db: Db, email: string, address: string): Promise<void> {
  const k = keys(email, address);
  await db.query(sql`insert into auth_failures (key) values (${k.account}), (${k.address})`);
  // Keep the table small: forget failures older than the window (cheap with the (key, at) index).
  await db.query(sql`delete from auth_failures where at < now() - make_interval(mins => ${WINDOW_MINUTES * 2})`);
}

export async function clearAccountFailures(db: Db, email: string): Promise<void> {
  await db.query(sql`delete from auth_failures where key = ${keys(email, '').account}`);
}

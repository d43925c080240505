// Password hashing with scrypt from node:crypto. Cost N=2^15, r=8, p=1 (128·N·r = 32 MiB, ~50-100 ms on one
// core): strong enough offline, cheap enough that sign-in is not a denial-of-service lever behind the
// per-account and per-address rate limits. Stored as `scrypt$N$r$p$salt$hash` so the cost can rise later.
import { randomBytes, scrypt as scryptCb, timingSafeEqual } from 'node:crypto';
import { promisify } from 'node:util';

const scrypt = promisify(scryptCb) as (pw: string, salt: Buffer, len: number, opts: { N: number; r: number; p: number; maxmem: number }) => Promise<Buffer>;
const COST = { N: 2 ** 15, r: 8, p: 1 };
const MAXMEM = 128 * 1024 * 1024;

export const PASSWORD_MIN = 10;
export const PASSWORD_MAX = 256;

export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(16);
  const hash = await scrypt(password, salt, 32, { ...COST, maxmem: MAXMEM });
  return ['scrypt', COST.N, COST.r, COST.p, salt.toString('base64url'), hash.toString('base64url')].join('$');
}

// Verified against when the e-mail is unknown, so the answer takes as long as for a real account.
const DUMMY = hashPassword('not-a-real-password-' + randomBytes(8).toString('hex'));

export async function verifyPassword(password: string, stored: string | null): Promise<boolean> {
  const target = stored ?? (await DUMMY);
  const [scheme, n, r, p, salt, hash] = target.split('$');
  if (scheme !== 'scrypt' || !salt || !hash) return false;
  const expected = Buffer.from(hash, 'base64url');
  const actual = await scrypt(password, Buffer.from(salt, 'base64url'), expected.length, { N: Number(n), r: Number(r), p: Number(p), maxmem: MAXMEM });
  return timingSafeEqual(actual, expected) && stored !== null;
}

// Where APP_ENCRYPTION_KEY comes from. Set in the environment, it always wins. Unset on the embedded
// database, the key lives in `encryption.key` beside the PGlite data directory (never inside it, so a
// copy of the database alone reveals no secret): made on first start — created atomically, mode 0600,
// only when absent — and read on every later start. With DATABASE_URL there is no file: unset means no key.
import { randomBytes } from 'node:crypto';
import { chmodSync, linkSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import type { Config } from './config.ts';
import { encryptionKeyFrom, keyId } from './crypto.ts';
import type { Logger } from './log.ts';

export interface EncryptionKeyOrigin {
  /** `environment`: APP_ENCRYPTION_KEY; `file`: the generated key file; `none`: no key. */
  source: 'environment' | 'file' | 'none';
  /** The key file (source `file`), absolute. */
  path: string | null;
  /** The key id stored ciphertexts carry (first 8 bytes of SHA-256 of the key, hex); never the key. */
  fingerprint: string | null;
}

export interface ResolvedKey {
  key: Buffer | null;
  origin: EncryptionKeyOrigin;
}

export const BACKUP_NOTE = 'back this file up separately: it is not in the database, and without it every stored secret must be entered again';

/** `<parent of PGLITE_DATA_DIR>/encryption.key`, absolute. */
export const keyFilePath = (config: Pick<Config, 'PGLITE_DATA_DIR'>) => join(dirname(resolve(config.PGLITE_DATA_DIR)), 'encryption.key');

function readKeyFile(path: string): Buffer | null {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw new Error(`cannot read the encryption key file ${path}: ${(err as Error).message}`);
  }
  try {
    return encryptionKeyFrom(text.trim());
  } catch {
    throw new Error(`the encryption key file ${path} does not hold 32 base64-encoded bytes: restore it from your backup (or set APP_ENCRYPTION_KEY)`);
  }
}

/** Write a new key to `path` unless one is there: complete before it appears (link of a 0600 temp file). */
function createKeyFile(path: string): { key: Buffer; created: boolean } {
  mkdirSync(dirname(path), { recursive: true });
  const tmp = `${path}.${process.pid}.tmp`;
  writeFileSync(tmp, `${randomBytes(32).toString('base64')}\n`, { mode: 0o600 });
  chmodSync(tmp, 0o600); // whatever the umask
  let created = true;
  try {
    linkSync(tmp, path); // fails with EEXIST when another start made one first: then that one counts
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw new Error(`cannot create the encryption key file ${path}: ${(err as Error).message}`);
    created = false;
  } finally {
    rmSync(tmp, { force: true });
  }
  return { key: readKeyFile(path)!, created };
}

/**
 * The key stored secrets use: APP_ENCRYPTION_KEY, else (embedded database only) the key file beside the
 * data directory, created on first start. `create: false` (the admin CLI) only reads an existing file:
 * the server's first start is what generates the key and says so.
 */
export function resolveEncryptionKey(config: Pick<Config, 'APP_ENCRYPTION_KEY' | 'DATABASE_DRIVER' | 'PGLITE_DATA_DIR'>, log: Logger, opts: { create?: boolean } = {}): ResolvedKey {
  const embedded = config.DATABASE_DRIVER === 'pglite';
  const path = embedded ? keyFilePath(config) : null;
  if (config.APP_ENCRYPTION_KEY) {
    const key = encryptionKeyFrom(config.APP_ENCRYPTION_KEY);
    const stored = path ? readKeyFile(path) : null;
    if (stored && !stored.equals(key)) {
      log.warn('APP_ENCRYPTION_KEY differs from the key in the encryption key file; the environment wins', { file: path, fingerprint: keyId(key), fileFingerprint: keyId(stored) });
    }
    return { key, origin: { source: 'environment', path: null, fingerprint: keyId(key) } };
  }
  if (!path) {
    log.warn('APP_ENCRYPTION_KEY is not set: secrets cannot be stored (see README, Configuration)');
    return { key: null, origin: { source: 'none', path: null, fingerprint: null } };
  }
  const existing = readKeyFile(path);
  if (!existing && opts.create === false) return { key: null, origin: { source: 'none', path: null, fingerprint: null } };
  const { key, created } = existing ? { key: existing, created: false } : createKeyFile(path);
  if (created) log.warn(`APP_ENCRYPTION_KEY unset: generated an encryption key for stored secrets in ${path} — ${BACKUP_NOTE}`, { file: path, fingerprint: keyId(key) });
  return { key, origin: { source: 'file', path, fingerprint: keyId(key) } };
}

// Small crypto helpers: constant-time comparison, random tokens, and AES-256-GCM for secrets at rest
// under APP_ENCRYPTION_KEY (spec: "Stored secrets … are encrypted with APP_ENCRYPTION_KEY").
//
// Ciphertext format: `v1.<key id>.<iv>.<ciphertext>.<tag>` (base64url parts). The key id is the first
// 8 bytes of SHA-256(key) in hex: it says which key encrypted a value, so a changed key is reported as
// "cannot decrypt — enter it again" instead of as corruption. The AAD binds a value to its place
// (e.g. `codehost_app_private_key:<app id>`), so ciphertexts cannot be swapped between rows.
import { createCipheriv, createDecipheriv, createHash, hkdfSync, randomBytes, timingSafeEqual } from 'node:crypto';
import { conflict } from './errors.ts';

export function sha256Hex(data: string | Uint8Array): string {
  return createHash('sha256').update(data).digest('hex');
}

/** Compare two secrets in constant time (for equal lengths; the length itself is not secret). */
export function constantTimeEqual(a: string | Uint8Array, b: string | Uint8Array): boolean {
  const x = typeof a === 'string' ? Buffer.from(a) : Buffer.from(a);
  const y = typeof b === 'string' ? Buffer.from(b) : Buffer.from(b);
  if (x.length !== y.length) {
    timingSafeEqual(x, x); // same work either way
    return false;
  }
  return timingSafeEqual(x, y);
}

export function randomToken(bytes = 32): string {
  return randomBytes(bytes).toString('base64url');
}

export function encryptionKeyFrom(base64: string): Buffer {
  const key = Buffer.from(base64, 'base64');
  if (key.length !== 32) throw new Error('APP_ENCRYPTION_KEY must decode to 32 bytes');
  return key;
}

export function keyId(key: Buffer): string {
  return sha256Hex(key).slice(0, 16);
}

/** A sub-key for one purpose, so the encryption key itself never signs or MACs anything else. */
export function deriveKey(key: Buffer, purpose: string): Uint8Array {
  return new Uint8Array(hkdfSync('sha256', key, Buffer.alloc(0), `svc:${purpose}`, 32));
}

export function encryptSecret(key: Buffer, plaintext: string, aad: string): string {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  cipher.setAAD(Buffer.from(aad));
  const ct = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
  return ['v1', keyId(key), iv.toString('base64url'), ct.toString('base64url'), cipher.getAuthTag().toString('base64url')].join('.');
}

export class DecryptError extends Error {
  constructor(readonly reason: 'key_missing' | 'other_key' | 'corrupt') {
    super(
      reason === 'key_missing'
        ? 'cannot decrypt: APP_ENCRYPTION_KEY is not set'
        : reason === 'other_key'
          ? 'cannot decrypt: it was encrypted with a different APP_ENCRYPTION_KEY — enter it again'
          : 'cannot decrypt: the stored value is damaged — enter it again',
    );
  }
}

export function decryptSecret(key: Buffer | null, stored: string, aad: string): string {
  if (!key) throw new DecryptError('key_missing');
  const parts = stored.split('.');
  if (parts.length !== 5 || parts[0] !== 'v1') throw new DecryptError('corrupt');
  if (parts[1] !== keyId(key)) throw new DecryptError('other_key');
  try {
    const decipher = createDecipheriv('aes-256-gcm', key, Buffer.from(parts[2], 'base64url'));
    decipher.setAAD(Buffer.from(aad));
    decipher.setAuthTag(Buffer.from(parts[4], 'base64url'));
    return Buffer.concat([decipher.update(Buffer.from(parts[3], 'base64url')), decipher.final()]).toString('utf8');
  } catch {
    throw new DecryptError('corrupt');
  }
}

/** Anything that stores a secret needs the key: 409 encryption_key_missing otherwise (spec: Roles). */
export function requireEncryptionKey(ctx: { keys: { encryption: Buffer | null } }): Buffer {
  if (!ctx.keys.encryption) throw conflict('encryption_key_missing', 'APP_ENCRYPTION_KEY is not set on the server; secrets cannot be stored');
  return ctx.keys.encryption;
}

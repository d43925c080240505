// Code-host app webhook signature (spec: "code-host app webhooks … X-Hub-Signature-256"; DESIGN §5).
//   X-Hub-Signature-256: sha256=<hex>, hex = HMAC-SHA256(key = the webhook secret as UTF-8, message = the raw body)
// GitHub's scheme: no timestamp, so replays are caught by the delivery id (X-GitHub-Delivery), which the
// hook records once per app. Pure and constant-time: a malformed header costs one digest and one
// comparison like a wrong one, so the answer's timing says nothing about how close a guess was.
import { timingSafeEqual } from 'node:crypto';
import { hmacSha256 } from '../webhooks/signature.ts';

export const GITHUB_HEADERS = { signature: 'X-Hub-Signature-256', delivery: 'X-GitHub-Delivery', event: 'X-GitHub-Event' } as const;

const SIGNATURE = /^sha256=([0-9a-f]{64})$/i;
const NOTHING = Buffer.alloc(32);

/** The header value GitHub sends for this body (the tests' and the benchmark's signer). */
export function githubSignature(secret: string, body: string | Uint8Array): string {
  return `sha256=${hmacSha256(secret, body).toString('hex')}`;
}

/** Does `header` sign `body` under `secret`? Always computes the digest and compares 32 bytes. */
export function verifyGithubSignature(header: string | null, body: Uint8Array, secret: string): boolean {
  const m = header ? SIGNATURE.exec(header) : null;
  const expected = hmacSha256(secret, body);
  const given = m ? Buffer.from(m[1], 'hex') : NOTHING;
  return timingSafeEqual(given, expected) && m !== null;
}

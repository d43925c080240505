// Signed one-time action links (issue #40 part 2; docs/notifications.md, "Action links"). A token is
// `<payload>.<mac>`, both base64url: the payload is the JSON {k: kind, t: target, u: user id or null,
// n: notification id, e: expiry in epoch seconds}; the MAC is HMAC-SHA256 over the payload's text under
// a key derived from APP_ENCRYPTION_KEY for this one purpose (lib/crypto.ts deriveKey), compared in
// constant time. Nothing is stored when a link is made: minting is deterministic (same notification,
// same user → same link), so the notifications list can mint the caller's links on every read and the
// chat push its channel link when it is rendered. Without APP_ENCRYPTION_KEY no link is made, and one
// presented is answered 409 encryption_key_missing, like every other feature that needs the key.
import { createHmac } from 'node:crypto';
import * as z from 'zod';
import { canonicalJson } from '../audit/audit.ts';
import { constantTimeEqual, deriveKey, sha256Hex } from '../lib/crypto.ts';

/** A link lives this long from the notification it came with. */
export const LINK_HOURS = 24;

/** The path parameter: two base64url parts, the MAC 32 bytes (43 characters). */
export const actionToken = z.string().regex(/^[A-Za-z0-9_-]{8,1024}\.[A-Za-z0-9_-]{43}$/, { message: 'must be an action link token' });

export interface LinkClaims {
  /** The action kind (functions/act/actions.ts). */
  k: string;
  /** Its target, as the kind's schema says. */
  t: Record<string, unknown>;
  /** The user it is for; null: a chat channel's link (whoever is signed in, with their role then). */
  u: string | null;
  /** The notification it came with. */
  n: string;
  /** Expiry, epoch seconds. */
  e: number;
}

const claimsSchema = z.strictObject({ k: z.string().max(64), t: z.record(z.string(), z.unknown()), u: z.string().max(64).nullable(), n: z.string().regex(/^[0-9]{1,18}$/), e: z.number().int() });

export const linkKey = (encryption: Buffer): Uint8Array => deriveKey(encryption, 'action-links');

const mac = (key: Uint8Array, payload: string) => createHmac('sha256', key).update(payload).digest('base64url');

export function mintToken(key: Uint8Array, c: LinkClaims): string {
  const payload = Buffer.from(JSON.stringify({ k: c.k, t: c.t, u: c.u, n: c.n, e: c.e })).toString('base64url');
  return `${payload}.${mac(key, payload)}`;
}

/** The claims of a token whose MAC is right; null for a forged or damaged one. */
export function verifyToken(key: Uint8Array, token: string): LinkClaims | null {
  const [payload, given] = token.split('.');
  if (!payload || !given || !constantTimeEqual(mac(key, payload), given)) return null;
  try {
    const parsed = claimsSchema.safeParse(JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')));
    return parsed.success ? parsed.data : null;
  } catch {
    return null;
  }
}

/**
 * The decision a link asks for: the same for every user's link and the channel's link of one
 * notification. Canonical JSON: a target read back from jsonb has its keys in another order.
 */
export const decisionId = (c: Pick<LinkClaims, 'k' | 't' | 'n'>) => sha256Hex(canonicalJson([c.k, c.t, c.n]));

/** Expiry of the links of a notification made at `createdAt`. */
export const linkExpiry = (createdAt: Date | string) => Math.floor(new Date(createdAt).getTime() / 1000) + LINK_HOURS * 3600;

// The key and the public address for links made outside a request (the chat pushes rendered by
// notifications/notify.ts), set once at start (serving.ts), like audit.ts useAuditKey.
let configured: { key: Uint8Array | null; base: string } = { key: null, base: '' };
export function useActionLinks(encryption: Buffer | null, base: string): void {
  configured = { key: encryption ? linkKey(encryption) : null, base: base.replace(/\/+$/, '') };
}
export const actionLinkConfig = () => configured;

/** The page address of a token. */
export const actUrl = (base: string, token: string) => `${base.replace(/\/+$/, '')}/#/act/${token}`;

/** The buttons' words per action kind (the registry, actions.ts, uses them too; kept here so notify.ts needs no route code). */
export const ACTION_LABELS: Record<string, string> = { 'pr.approve': 'Approve', 'run.retry': 'Run again', 'cap.raise': 'Raise the cap and continue', 'cap.stop': 'Stop this issue' };

/** A button's words: the kind's, with the amount of a cap raise (`Raise the cap by $N and continue`). */
export function actionLabel(a: { kind: string; target: Record<string, unknown> }): string {
  if (a.kind === 'cap.raise' && typeof a.target.by === 'number') return `Raise the cap by $${a.target.by.toFixed(2)} and continue`;
  return ACTION_LABELS[a.kind] ?? a.kind;
}

/** An action a notification asks for, as stored in its data (`actions`): no link, only what and on what. */
export interface NotificationAction {
  kind: string;
  target: Record<string, unknown>;
}

/** The links of a notification's actions for `user` (null: the channel's links), or none without a key. */
export function notificationLinks(
  key: Uint8Array | null,
  base: string,
  user: string | null,
  n: { id: string; createdAt: Date | string; actions: NotificationAction[] },
): { kind: string; label: string; url: string; expiresAt: string }[] {
  if (!key) return [];
  const e = linkExpiry(n.createdAt);
  return n.actions.map((a) => ({ kind: a.kind, label: actionLabel(a), url: actUrl(base, mintToken(key, { k: a.kind, t: a.target, u: user, n: n.id, e })), expiresAt: new Date(e * 1000).toISOString() }));
}

/** The stored actions of a notification's data (anything else there is ignored). */
export const storedActions = (data: Record<string, unknown>): NotificationAction[] =>
  Array.isArray(data.actions) ? (data.actions as NotificationAction[]).filter((a) => a && typeof a.kind === 'string' && a.target && typeof a.target === 'object') : [];

// Opening and using an action link (issue #40 part 2; docs/notifications.md, "Action links"). Both
// GET and POST /api/act/:token check, in this order: a browser session of a signed-in user (an API
// token is refused: a link is for a person), the key (409 encryption_key_missing without
// APP_ENCRYPTION_KEY), the MAC in constant time (forged or damaged → 404 invalid_link: the same answer as
// a kind or target that does not exist, so a guess learns nothing), expiry on the server's clock (410),
// the link's user (a personal link of someone else → 403), the decision not taken yet (409), and the
// caller's role on the target's project NOW (403 below the kind's role, or with no role at all). A
// refusal changes nothing. Using it claims the decision first (one row; a second request gets 409), then
// performs it; a failure releases the claim, so the link can be tried again; success is audited with
// `via: "link"`.
import type { AppContext, Principal } from '../lib/context.ts';
import { projectRole, roleRank } from '../auth/auth.ts';
import { forbidden } from '../auth/auth.ts';
import { appendAudit } from '../audit/audit.ts';
import { requireEncryptionKey, sha256Hex } from '../lib/crypto.ts';
import { HttpError, conflict, notFound } from '../lib/errors.ts';
import { actionKind } from './actions.ts';
import type { ActionKind } from './actions.ts';
import { claimDecision, decisionUse, recordOutcome, releaseDecision } from './queries.ts';
import { decisionId, linkKey, verifyToken } from './tokens.ts';
import type { LinkClaims } from './tokens.ts';

export interface OpenLink {
  claims: LinkClaims;
  kind: ActionKind<unknown>;
  target: unknown;
  projectId: string;
  id: string;
}

export async function openLink(ctx: AppContext, principal: Principal, token: string): Promise<OpenLink> {
  if (principal.via !== 'session') throw forbidden('an action link is used signed in, in a browser: API tokens cannot use it');
  const key = linkKey(requireEncryptionKey(ctx));
  const claims = verifyToken(key, token);
  if (!claims) throw notFound('no such action link');
  const kind = actionKind(claims.k);
  const target = kind.target.safeParse(claims.t);
  if (!target.success) throw notFound('no such action link');
  if (claims.e * 1000 <= ctx.clock.now()) throw new HttpError(410, 'link_expired', 'this link has expired (links last 24 hours): act from the admin pages instead');
  if (claims.u !== null && claims.u !== principal.user.id) throw forbidden('this link was made for another user: open your own notification');
  const id = decisionId(claims);
  const used = await decisionUse(ctx.db, id);
  if (used) throw conflict('link_used', `this was already done${used.by ? ` by ${used.by}` : ''} at ${new Date(used.used_at).toISOString()}`);
  const projectId = await kind.projectOf(ctx.db, target.data);
  if (!projectId) throw notFound('no such action link');
  const role = await projectRole(ctx.db, principal.user, projectId);
  if (!role || roleRank(role) < roleRank(kind.role)) throw forbidden(`this needs the ${kind.role} role on the project${role ? `; you have ${role}` : ''}`);
  return { claims, kind, target: target.data, projectId, id };
}

export async function useLink(ctx: AppContext, principal: Principal, token: string, requestId: string) {
  const link = await openLink(ctx, principal, token);
  const { claims, kind, id } = link;
  const usedAt = await claimDecision(ctx.db, { id, tokenHash: sha256Hex(token), kind: kind.kind, target: claims.t, linkUser: claims.u, usedBy: principal.user.id, notification: claims.n, expiresAt: new Date(claims.e * 1000) });
  if (!usedAt) throw conflict('link_used', 'this was already done');
  let done;
  try {
    done = await kind.perform(ctx, principal, link.target, link.projectId);
  } catch (err) {
    await releaseDecision(ctx.db, id);
    throw err;
  }
  await ctx.db.transaction(async (tx) => {
    await recordOutcome(tx, id, done);
    await appendAudit(tx, {
      actor: principal,
      action: kind.kind,
      target: { type: 'project', id: link.projectId },
      diff: { via: 'link', target: claims.t, notificationId: claims.n, personal: claims.u !== null, outcome: done.outcome, ...done.data },
      requestId,
    });
  });
  return { kind: kind.kind, outcome: done.outcome, data: done.data, usedAt: new Date(usedAt).toISOString() };
}

// POST /hooks/<publicId> — the inbound trigger endpoint (spec: Endpoints → Inbound trigger; Errors →
// Inbound trigger responses; docs/triggers.md). The protocol, step by step; the first that fails answers:
//   1. look up the trigger by SHA-256 of the publicId, malformed ids included (same work for every id):
//      unknown or disabled → 404 with an empty body
//   2. Content-Encoding present, or a content type other than application/json → 415
//   3. read the raw body: over 256 KB → 413 as soon as the limit is crossed (declared or streamed; the
//      rest is never read); not all there within TRIGGER_BODY_TIMEOUT_SECONDS → 408; both close
//   4. signature over the raw bytes, in constant time, with the current secret and the previous one
//      within its 24 h (a dummy otherwise, so the work is the same) → 401 with an empty body
//   5. in ONE autocommit statement: the delivery id is claimed for 24 h (else 409 `replayed`); a payload the
//      placeholder rules refuse is recorded `refused` with its reasons and answered 422 `invalid_payload`
//      (it takes no rate token); else a token is taken from the trigger's bucket (none → the statement
//      raises SV429 and rolls back, nothing recorded: 429) and the delivery is recorded `accepted`
//   6. 202 {deliveryId, status} once that has committed; the firer (fire.ts) starts the run afterwards.
// Replay memory and the bucket are rows, so every process behind one address agrees.
import { z } from 'zod';
import { route } from '../lib/context.ts';
import { DecryptError } from '../lib/crypto.ts';
import type { AppContext, Route } from '../lib/context.ts';
import { sql } from '../lib/db/index.ts';
import { errorResponse, json } from '../lib/errors.ts';
import { HttpError } from '../lib/errors.ts';
import { isJsonType, readBody } from '../lib/http.ts';
import { empty } from '../lib/respond.ts';
import { parsePayload, renderArgs } from './placeholders.ts';
import type { Reason } from './placeholders.ts';
import type { CachedTrigger } from './cache.ts';
import { PUBLIC_ID, liveSecrets, publicIdHash } from './triggers.ts';
import type { TriggerRow } from './triggers.ts';
import { signedHeaders, verifyTrigger } from './verify.ts';

export const HOOK_BODY_LIMIT = 256 * 1024;
const REPLAY_MEMORY_MS = 24 * 3600 * 1000;
/** Stands in for a missing second secret, so every verification computes two digests. */
const DUMMY_SECRET = 'svc-dummy-secret-never-issued-as-a-trigger-secret';

/** An answer without a body; `close` when the request body was left unread. */
const bare = (status: number, close: boolean) => empty(status, close ? { connection: 'close' } : {});

/** 422 invalid_payload with every reason (the hook and the dry run answer alike). */
export function refusedPayload(reasons: Pick<Reason, 'field' | 'code' | 'message'>[]): Response {
  const fields = Object.fromEntries(reasons.map((r) => [r.field, r.message]));
  return json({ error: { code: 'invalid_payload', message: `payload refused by the placeholder rules: ${reasons.length} reason(s)`, fields }, reasons }, { status: 422 });
}

/** SQLSTATE of svc_trigger_rate_limited() (sql/0010_trigger_accept.sql): the bucket was empty. */
const RATE_LIMITED = 'SV429';
/** SQLSTATE foreign_key_violation: the trigger was deleted between the lookup and the record. */
const TRIGGER_GONE = '23503';

type Verdict = { kind: 'replayed' } | { kind: 'refused'; reasons: Reason[] } | { kind: 'accepted' } | { kind: 'rate_limited' } | { kind: 'gone' } | { kind: 'stale' };

/**
 * Step 5: replay memory, the placeholder verdict, the rate bucket and the delivery row, atomically, as
 * ONE autocommit statement: the trigger's bucket row is locked only while PostgreSQL runs it and commits,
 * never across a round trip to this process (which serialized every accepted delivery of a trigger).
 */
async function record(ctx: AppContext, c: CachedTrigger, delivery: string, raw: Uint8Array): Promise<Verdict> {
  const t = c.row;
  const now = new Date(ctx.clock.now());
  const parsed = parsePayload(raw);
  const rendered = parsed.ok ? renderArgs(t.action === 'skill' ? t.args : [], parsed.payload, t.value_pattern, t.allowed_paths) : parsed;
  const capacity = ctx.config.TRIGGER_RATE_PER_HOUR;
  // Only while the trigger is enabled and its row is the version that was verified with (the cache may
  // hold an older one: then nothing is claimed and `current` is false).
  const current = sql`select 1 from triggers where id = ${t.id} and enabled and xmin::text = ${c.version}`;
  // The id is used up for 24 h; an older claim of it is taken over.
  const claim = sql`
    insert into trigger_delivery_ids (trigger_id, delivery_id, seen_at) select ${t.id}, ${delivery}, ${now} where exists (${current})
    on conflict (trigger_id, delivery_id) do update set seen_at = excluded.seen_at
     where trigger_delivery_ids.seen_at <= ${new Date(now.getTime() - REPLAY_MEMORY_MS)}
    returning trigger_id`;
  try {
    if (!rendered.ok) {
      // A refused payload uses up its id and takes no token.
      const [row] = await ctx.db.query<{ current: boolean; refused: boolean }>(sql`
        with claim as (${claim}),
        refused as (
          insert into inbound_deliveries (id, trigger_id, delivery_id, status, reason, reasons, created_at, updated_at)
          select gen_random_uuid()::text, trigger_id, ${delivery}, 'refused', 'invalid_payload', ${sql.json(rendered.reasons)}, ${now}, ${now} from claim
          returning 1)
        select exists (${current}) as current, exists (select 1 from refused) as refused`);
      if (!row.current) return { kind: 'stale' };
      return row.refused ? { kind: 'refused', reasons: rendered.reasons } : { kind: 'replayed' };
    }
    // Token bucket: `capacity` tokens, refilled at capacity per hour, one per accepted delivery; taken
    // only when the id was claimed. Claimed without a token: svc_trigger_rate_limited() raises, and the
    // claim is rolled back with the statement.
    const refilled = sql`least(${capacity}::float8, trigger_rate.tokens + greatest(0, extract(epoch from (${now}::timestamptz - trigger_rate.updated_at))::float8) * ${capacity / 3600}::float8)`;
    const [row] = await ctx.db.query<{ current: boolean; accepted: boolean }>(sql`
      with claim as (${claim}),
      token as (
        insert into trigger_rate (trigger_id, tokens, updated_at) select trigger_id, ${capacity - 1}::float8, ${now} from claim
        on conflict (trigger_id) do update set tokens = ${refilled} - 1, updated_at = greatest(trigger_rate.updated_at, ${now}::timestamptz)
         where ${refilled} >= 1
        returning trigger_id),
      accepted as (
        insert into inbound_deliveries (id, trigger_id, delivery_id, status, args, created_at, updated_at)
        select gen_random_uuid()::text, trigger_id, ${delivery}, 'accepted', ${sql.json(rendered.args)}, ${now}, ${now} from token
        returning 1)
      select exists (${current}) as current,
             case when exists (select 1 from accepted) then true
                  when exists (select 1 from claim) then svc_trigger_rate_limited()
                  else false end as accepted`);
    if (row.accepted) return { kind: 'accepted' };
    return row.current ? { kind: 'replayed' } : { kind: 'stale' };
  } catch (err) {
    const code = (err as { code?: string }).code;
    if (code === RATE_LIMITED) return { kind: 'rate_limited' };
    if (code === TRIGGER_GONE) return { kind: 'gone' };
    throw err;
  }
}

/** The row at its version, with its secrets decrypted (null when none decrypts: nothing verifies). */
async function load(ctx: AppContext, hash: string): Promise<CachedTrigger | null> {
  const mark = ctx.triggers?.mark() ?? 0;
  const [row] = await ctx.db.query<TriggerRow & { row_version: string }>(sql`select *, xmin::text as row_version from triggers where public_id_hash = ${hash}`);
  if (!row) return null;
  const { row_version: version, ...t } = row;
  const c: CachedTrigger = { row: t, version, secrets: decryptSecrets(ctx, t) };
  ctx.triggers?.set(hash, c, mark);
  return c;
}

function decryptSecrets(ctx: AppContext, t: TriggerRow): CachedTrigger['secrets'] {
  if (!ctx.keys.encryption) return null;
  try {
    // Both, whatever the clock says now: liveness is decided per request (usableSecrets).
    const [current, previous] = liveSecrets(t, ctx.keys.encryption, -Infinity);
    return { current, previous: previous ?? null, previousUntilMs: t.previous_secret_expires_at ? new Date(t.previous_secret_expires_at).getTime() : 0 };
  } catch (err) {
    if (!(err instanceof DecryptError)) throw err;
    ctx.log.warn('a trigger secret does not decrypt: rotate it (see docs/triggers.md)', { triggerId: t.id, problem: err.message });
    return null;
  }
}

/** The secrets that verify now, padded with dummies to two, so every verification computes two digests. */
function usableSecrets(c: CachedTrigger, nowMs: number): string[] {
  const s = c.secrets;
  if (!s) return [DUMMY_SECRET, DUMMY_SECRET];
  return [s.current, s.previous !== null && s.previousUntilMs > nowMs ? s.previous : DUMMY_SECRET];
}

/** How many times a request is checked again from the database when the trigger changed under it. */
const FRESH_ATTEMPTS = 3;

async function hook(publicId: string, request: Request, ctx: AppContext): Promise<Response> {
  // 1. The same query for every id not in the cache (which holds enabled triggers only); a malformed id
  //    is hashed too and simply finds nothing.
  const hash = publicIdHash(publicId);
  let t = ctx.triggers?.get(hash) ?? (await load(ctx, hash));
  const unread = request.body !== null;
  if (!t || !t.row.enabled || !PUBLIC_ID.test(publicId) || t.row.public_id !== publicId) return bare(404, unread);
  // 2.
  if (request.headers.has('content-encoding') || !isJsonType(request.headers.get('content-type'))) {
    const e = new HttpError(415, 'unsupported_media_type', 'the body must be uncompressed application/json', undefined, unread ? { connection: 'close' } : undefined);
    return errorResponse(e);
  }
  // 3. Throws 413 or 408 (closing the connection).
  const raw = await readBody(request, HOOK_BODY_LIMIT, ctx.config.TRIGGER_BODY_TIMEOUT_SECONDS * 1000);
  const signed = signedHeaders(request.headers);
  for (let attempt = 0; ; attempt++) {
    // 4. Without the key, or with another key than the one that stored them, no secret decrypts: nothing verifies.
    const secrets = usableSecrets(t, ctx.clock.now());
    const verdict = verifyTrigger(signed, raw, secrets, ctx.clock.now());
    if (!verdict.ok || secrets[verdict.secretIndex] === DUMMY_SECRET) return bare(401, false);
    // 5.
    const outcome = await record(ctx, t, verdict.delivery, raw);
    if (outcome.kind === 'stale') {
      // The trigger changed since `t` was read (cached, or in a race): forget it, check again from the database.
      ctx.triggers?.invalidate(t.row.id);
      const fresh = attempt < FRESH_ATTEMPTS ? await load(ctx, hash) : null;
      if (attempt >= FRESH_ATTEMPTS) throw new Error(`trigger ${t.row.id} kept changing while a delivery was recorded`);
      if (!fresh || !fresh.row.enabled || fresh.row.public_id !== publicId) return bare(404, false);
      t = fresh;
      continue;
    }
    if (outcome.kind === 'rate_limited') return errorResponse(new HttpError(429, 'rate_limited', `this trigger accepts ${ctx.config.TRIGGER_RATE_PER_HOUR} deliveries per hour; nothing was recorded, retry later with the same delivery id`));
    if (outcome.kind === 'gone') return bare(404, false);
    if (outcome.kind === 'replayed') return errorResponse(new HttpError(409, 'replayed', 'this delivery id was used within the last 24 hours'));
    if (outcome.kind === 'refused') return refusedPayload(outcome.reasons);
    // 6. Committed: answer, and let the firer start the run after this answer.
    setImmediate(() => ctx.firer?.kick());
    return json({ deliveryId: verdict.delivery, status: 'accepted' }, { status: 202 });
  }
}

export const routes: Route[] = [
  route({
    method: 'POST',
    path: '/hooks/:publicId',
    summary: 'Inbound trigger (spec): signed JSON POST from another system; answers 202 once recorded, the run starts after the answer',
    tag: 'triggers',
    access: 'public',
    rawBody: true,
    // Never refused here: the raw (still percent-encoded) segment; a malformed one is a plain 404 below.
    params: z.strictObject({ publicId: z.string().describe('The trigger URL\'s 24 characters') }),
    status: 202,
    responses: {
      202: { description: 'verified and recorded', schema: z.object({ deliveryId: z.string(), status: z.literal('accepted') }) },
      401: { description: 'signature missing or wrong, or timestamp more than 300 s from the server clock; empty body' },
      404: { description: 'unknown or disabled trigger; empty body' },
      408: { description: `the body did not arrive within TRIGGER_BODY_TIMEOUT_SECONDS` },
      409: { description: 'delivery id already used within 24 hours: code replayed' },
      413: { description: 'body over 256 KB' },
      415: { description: 'compressed body, or not application/json' },
      422: { description: 'payload refused by the placeholder rules: code invalid_payload, with every reason' },
      429: { description: "the trigger's rate limit is reached; nothing recorded" },
    },
    handler: ({ params, request }, ctx) => hook(params.publicId, request, ctx),
  }),
];

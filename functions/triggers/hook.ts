// POST /hooks/<publicId> — the inbound trigger endpoint (spec: Endpoints → Inbound trigger; Errors →
// Inbound trigger responses; docs/triggers.md). The protocol, step by step; the first that fails answers:
//   1. look up the trigger: an enabled one in this process's cache (cache.ts) by publicId, else in the
//      database by SHA-256 of the publicId, malformed ids included (the same work for every id that is
//      not an enabled trigger's): unknown or disabled → 404 with an empty body
//   2. Content-Encoding present, or a content type other than application/json → 415
//   3. read the raw body: over 256 KB → 413 as soon as the limit is crossed (declared or streamed; the
//      rest is never read); not all there within TRIGGER_BODY_TIMEOUT_SECONDS → 408; both close
//   4. signature over the raw bytes, in constant time, with the current secret and the previous one
//      within its 24 h → 401 with an empty body
//   5. in ONE autocommit statement: the delivery id is claimed for 24 h (else 409 `replayed`); a payload the
//      placeholder rules refuse is recorded `refused` with its reasons and answered 422 `invalid_payload`
//      (it takes no rate token); else a token is taken from the trigger's bucket (none → nothing is
//      claimed or recorded: 429) and the delivery is recorded `accepted` — the deliveries of one trigger
//      that arrive while its previous statement runs go together in the next (svc_trigger_accept)
//   6. 202 {deliveryId, status} once that has committed; the firer (fire.ts) starts the run afterwards.
// Replay memory and the bucket are rows, so every process behind one address agrees.
import { createSecretKey } from 'node:crypto';
import type { KeyObject } from 'node:crypto';
import * as z from 'zod';
import { route } from '../lib/context.ts';
import { DecryptError } from '../lib/crypto.ts';
import type { AppContext, Route } from '../lib/context.ts';
import { sql } from '../lib/db/index.ts';
import { errorResponse, json } from '../lib/errors.ts';
import { HttpError } from '../lib/errors.ts';
import { isJsonType, readBody } from '../lib/http.ts';
import { empty } from '../lib/respond.ts';
import { hookAccepted } from '../../protocol/api/triggers.ts';
import { parsePayload, renderArgs } from '../../protocol/placeholders.ts';
import type { Reason } from '../../protocol/placeholders.ts';
import type { CachedTrigger } from './cache.ts';
import { PUBLIC_ID, liveSecrets, publicIdHash } from './triggers.ts';
import type { TriggerRow } from './triggers.ts';
import { signedHeaders, verifyTrigger } from './verify.ts';
import { triggerActivity } from './fire.ts';
import { isDatabaseUnavailable } from '../lib/db/unavailable.ts';
import { countTriggerCall } from '../metrics/registry.ts';

export const HOOK_BODY_LIMIT = 256 * 1024;
const REPLAY_MEMORY_MS = 24 * 3600 * 1000;
/** Verifies for a trigger whose secrets do not decrypt: a digest is computed as for any trigger, and never accepted. */
const DUMMY_KEY = createSecretKey(Buffer.from('svc-dummy-secret-never-issued-as-a-trigger-secret', 'utf8'));

/**
 * The hook's answers without a body (401, 404) — what most refused calls get — as a plain status, not a
 * Response: the server's door (app.ts createHookDoor) writes it straight to Node's response, the route
 * below makes a Response of it. `close` when the request body was left unread.
 */
export interface Empty {
  empty: true;
  status: 401 | 404;
  close: boolean;
}
const bare = (status: Empty['status'], close: boolean): Empty => ({ empty: true, status, close });
export const isEmpty = (answer: Response | Empty): answer is Empty => (answer as Empty).empty === true;
/** Its headers, for either way of sending it. */
export const emptyHeaders = (a: Empty): Record<string, string> => (a.close ? { 'content-length': '0', connection: 'close' } : { 'content-length': '0' });
const emptyResponse = (a: Empty): Response => empty(a.status, emptyHeaders(a));

/** 422 invalid_payload with every reason (the hook and the dry run answer alike). */
export function refusedPayload(reasons: Pick<Reason, 'field' | 'code' | 'message'>[]): Response {
  const fields = Object.fromEntries(reasons.map((r) => [r.field, r.message]));
  return json({ error: { code: 'invalid_payload', message: `payload refused by the placeholder rules: ${reasons.length} reason(s)`, fields }, reasons }, { status: 422 });
}

/** SQLSTATE foreign_key_violation: the trigger was deleted between the lookup and the record. */
const TRIGGER_GONE = '23503';

type Verdict = { kind: 'replayed' } | { kind: 'refused'; reasons: Reason[] } | { kind: 'accepted' } | { kind: 'rate_limited' } | { kind: 'gone' } | { kind: 'stale' };

/**
 * Step 5: replay memory, the placeholder verdict, the rate bucket and the delivery row, atomically, in
 * autocommit statements that lock the trigger's bucket row only inside PostgreSQL, never across a round
 * trip to this process. Only while the trigger is enabled and its row is still the version that was
 * verified with (the cache may hold an older one: then nothing is recorded and the verdict is `stale`).
 */
async function record(ctx: AppContext, c: CachedTrigger, delivery: string, raw: Uint8Array): Promise<Verdict> {
  const t = c.row;
  const parsed = parsePayload(raw);
  const rendered = parsed.ok ? renderArgs(t.action === 'skill' ? t.args : [], parsed.payload, t.value_pattern, t.allowed_paths) : parsed;
  try {
    if (rendered.ok) return await accept(ctx, c, delivery, rendered.args);
    // A refused payload uses up its id for 24 h (an older claim of it is taken over) and takes no token.
    const now = new Date(ctx.clock.now());
    const current = sql`select 1 from triggers where id = ${t.id} and enabled and xmin::text = ${c.version}`;
    // In one transaction with its activity item (trigger.refused, once per delivery row), so neither exists alone.
    const row = await ctx.db.transaction(async (tx) => {
      const [r] = await tx.query<{ current: boolean; refused: string | null }>(sql`
      with claim as (
        insert into trigger_delivery_ids (trigger_id, delivery_id, seen_at) select ${t.id}, ${delivery}, ${now} where exists (${current})
        on conflict (trigger_id, delivery_id) do update set seen_at = excluded.seen_at
         where trigger_delivery_ids.seen_at <= ${new Date(now.getTime() - REPLAY_MEMORY_MS)}
        returning trigger_id),
      refused as (
        insert into inbound_deliveries (id, trigger_id, delivery_id, status, reason, reasons, created_at, updated_at)
        select gen_random_uuid()::text, trigger_id, ${delivery}, 'refused', 'invalid_payload', ${sql.json(rendered.reasons)}, ${now}, ${now} from claim
        returning id)
      select exists (${current}) as current, (select id from refused) as refused`);
      if (r.refused) await triggerActivity(tx, t, { id: r.refused, deliveryId: delivery }, { reason: 'invalid_payload' });
      return r;
    });
    if (!row.current) return { kind: 'stale' };
    return row.refused ? { kind: 'refused', reasons: rendered.reasons } : { kind: 'replayed' };
  } catch (err) {
    if ((err as { code?: string }).code === TRIGGER_GONE) return { kind: 'gone' };
    throw err;
  }
}

/** Deliveries recorded together in one statement, at most (functions/triggers/hook.ts accept()). */
const ACCEPT_BATCH = 100;
/** Statements of one trigger in flight at once per process: the next is sent while one commits. */
const ACCEPT_IN_FLIGHT = 2;

interface Waiting {
  delivery: string;
  args: string[];
  resolve: (v: Verdict) => void;
  reject: (err: unknown) => void;
}
interface Batch {
  queue: Waiting[];
  running: number;
}
/** Per database handle (one per process): the deliveries waiting, by trigger and verified row version. */
const batches = new WeakMap<object, Map<string, Batch>>();

/**
 * Replay memory, the rate bucket and the `accepted` row for a payload the placeholder rules let through.
 * At most ACCEPT_IN_FLIGHT statements per trigger are in flight in this process; deliveries that arrive
 * meanwhile wait and go together in the next one (svc_trigger_accept, sql/0019), which locks the
 * trigger's bucket row once for all of them and decides each exactly as one-at-a-time recording would,
 * in arrival order. An idle trigger's delivery goes at once; under a stream, one commit records many
 * (docs/performance.md, "Inbound triggers").
 */
function accept(ctx: AppContext, c: CachedTrigger, delivery: string, args: string[]): Promise<Verdict> {
  let byKey = batches.get(ctx.db);
  if (!byKey) batches.set(ctx.db, (byKey = new Map()));
  const key = `${c.row.id}/${c.version}`;
  let batch = byKey.get(key);
  if (!batch) byKey.set(key, (batch = { queue: [], running: 0 }));
  const b = batch;
  const verdict = new Promise<Verdict>((resolve, reject) => b.queue.push({ delivery, args, resolve, reject }));
  if (b.running < ACCEPT_IN_FLIGHT) void flush(ctx, c, b, () => byKey.delete(key));
  return verdict;
}

/** Records what is queued until nothing is; every item is answered (resolved or rejected), nothing escapes. */
async function flush(ctx: AppContext, c: CachedTrigger, b: Batch, done: () => void): Promise<void> {
  b.running++;
  while (b.queue.length) {
    const items = b.queue.splice(0, ACCEPT_BATCH);
    try {
      const verdicts = await acceptBatch(ctx, c, items);
      items.forEach((item, i) => item.resolve(verdicts[i]));
    } catch (err) {
      for (const item of items) item.reject(err);
    }
  }
  // In the same synchronous step as the empty queue above: a delivery queued after this starts a new batch.
  if (--b.running === 0) done();
}

async function acceptBatch(ctx: AppContext, c: CachedTrigger, items: Waiting[]): Promise<Verdict[]> {
  const now = ctx.clock.now();
  const payload = items.map((i) => ({ d: i.delivery, a: i.args }));
  const [row] = await ctx.db.query<{ verdicts: ('accepted' | 'replayed' | 'rate_limited')[] | null }>(sql`
    select svc_trigger_accept(${c.row.id}::text, ${c.version}::text, ${sql.json(payload)}::jsonb, ${new Date(now)}::timestamptz,
                              ${ctx.config.TRIGGER_RATE_PER_HOUR}::float8, ${new Date(now - REPLAY_MEMORY_MS)}::timestamptz) as verdicts`);
  if (row.verdicts === null) return items.map(() => ({ kind: 'stale' }));
  if (row.verdicts.length !== items.length) throw new Error(`svc_trigger_accept answered ${row.verdicts.length} verdicts for ${items.length} deliveries`);
  return row.verdicts.map((kind) => ({ kind }));
}

/** The row at its version, with its secrets decrypted (null when none decrypts: nothing verifies). */
async function load(ctx: AppContext, publicId: string): Promise<CachedTrigger | null> {
  const mark = ctx.triggers?.mark() ?? 0;
  const hash = publicIdHash(publicId);
  const [row] = await ctx.db.query<TriggerRow & { row_version: string }>(sql`select *, xmin::text as row_version from triggers where public_id_hash = ${hash}`);
  if (!row) return null;
  const { row_version: version, ...t } = row;
  const c: CachedTrigger = { row: t, version, secrets: decryptSecrets(ctx, t) };
  ctx.triggers?.set(publicId, c, mark);
  return c;
}

function decryptSecrets(ctx: AppContext, t: TriggerRow): CachedTrigger['secrets'] {
  if (!ctx.keys.encryption) return null;
  try {
    // Both, whatever the clock says now: liveness is decided per request (usableSecrets).
    const [current, previous] = liveSecrets(t, ctx.keys.encryption, -Infinity).map((s) => createSecretKey(Buffer.from(s, 'utf8')));
    return { current, previous: previous ?? null, previousUntilMs: t.previous_secret_expires_at ? new Date(t.previous_secret_expires_at).getTime() : 0 };
  } catch (err) {
    if (!(err instanceof DecryptError)) throw err;
    ctx.log.warn('a trigger secret does not decrypt: rotate it (see docs/triggers.md)', { triggerId: t.id, problem: err.message });
    return null;
  }
}

/**
 * The secrets that verify now: the current one, and the previous one within its 24 h. One digest each —
 * the time taken can tell that a rotation is under way, which tells nothing of either secret (docs/triggers.md).
 */
function usableSecrets(c: CachedTrigger, nowMs: number): KeyObject[] {
  const s = c.secrets;
  if (!s) return [DUMMY_KEY];
  return s.previous !== null && s.previousUntilMs > nowMs ? [s.current, s.previous] : [s.current];
}

/** How many times a request is checked again from the database when the trigger changed under it. */
const FRESH_ATTEMPTS = 3;

/**
 * What the hook reads of a request, from a web Request (the route below) or from Node's own request
 * (app.ts createHookDoor, the way the server takes every POST /hooks/…).
 */
export interface HookRequest {
  headers: Pick<Headers, 'get' | 'has'>;
  /** Does a body (possibly empty) follow the headers? */
  hasBody: boolean;
  /** The raw body: 413 past `limit`, 408 past `timeoutMs` (both close the connection). */
  read(limit: number, timeoutMs: number): Promise<Uint8Array>;
}

/** The public id in a request target `/hooks/<id>[/…][?…]` — the route's own match — or null for anything else. */
const HOOK_TARGET = /^\/hooks\/([^/?#\\]+)\/*(?:\?|$)/;
/** `.` and `..` (also percent-encoded): dot segments that URL parsing removes, so the router decides those. */
const DOT_SEGMENT = /^(?:\.|%2e){1,2}$/i;
export function hookPublicId(target: string): string | null {
  const m = HOOK_TARGET.exec(target);
  return m && !DOT_SEGMENT.test(m[1]) ? m[1] : null;
}

/** The hook's answer, counted by its status and reason (svc_trigger_calls_total, functions/metrics/registry.ts). */
export async function hook(publicId: string, request: HookRequest, ctx: AppContext): Promise<Response | Empty> {
  try {
    const answer = await answerHook(publicId, request, ctx);
    countTriggerCall(answer.status);
    return answer;
  } catch (err) {
    countTriggerCall(err instanceof HttpError ? err.status : isDatabaseUnavailable(err) ? 503 : 500);
    throw err;
  }
}

async function answerHook(publicId: string, request: HookRequest, ctx: AppContext): Promise<Response | Empty> {
  // 1. The same query for every id not in the cache (which holds enabled triggers only); a malformed id
  //    is hashed too and simply finds nothing.
  let t = ctx.triggers?.get(publicId) ?? (await load(ctx, publicId));
  const unread = request.hasBody;
  if (!t || !t.row.enabled || !PUBLIC_ID.test(publicId) || t.row.public_id !== publicId) return bare(404, unread);
  // 2.
  if (request.headers.has('content-encoding') || !isJsonType(request.headers.get('content-type'))) {
    const e = new HttpError(415, 'unsupported_media_type', 'the body must be uncompressed application/json', undefined, unread ? { connection: 'close' } : undefined);
    return errorResponse(e);
  }
  // 3. Throws 413 or 408 (closing the connection).
  const raw = await request.read(HOOK_BODY_LIMIT, ctx.config.TRIGGER_BODY_TIMEOUT_SECONDS * 1000);
  const signed = signedHeaders(request.headers);
  for (let attempt = 0; ; attempt++) {
    // 4. Without the key, or with another key than the one that stored them, no secret decrypts: nothing verifies.
    const secrets = usableSecrets(t, ctx.clock.now());
    const verdict = verifyTrigger(signed, raw, secrets, ctx.clock.now());
    if (!verdict.ok || secrets[verdict.secretIndex] === DUMMY_KEY) return bare(401, false);
    // 5.
    const outcome = await record(ctx, t, verdict.delivery, raw);
    if (outcome.kind === 'stale') {
      // The trigger changed since `t` was read (cached, or in a race): forget it, check again from the database.
      ctx.triggers?.invalidate(t.row.id);
      const fresh = attempt < FRESH_ATTEMPTS ? await load(ctx, publicId) : null;
      if (attempt >= FRESH_ATTEMPTS) throw new Error(`trigger ${t.row.id} kept changing while a delivery was recorded`);
      if (!fresh || !fresh.row.enabled || fresh.row.public_id !== publicId) return bare(404, false);
      t = fresh;
      continue;
    }
    if (outcome.kind === 'rate_limited') return errorResponse(new HttpError(429, 'rate_limited', `this trigger accepts ${ctx.config.TRIGGER_RATE_PER_HOUR} deliveries per hour; nothing was recorded, retry later with the same delivery id`));
    if (outcome.kind === 'gone') return bare(404, false);
    if (outcome.kind === 'replayed') return errorResponse(new HttpError(409, 'replayed', 'this delivery id was used within the last 24 hours'));
    if (outcome.kind === 'refused') return refusedPayload(outcome.reasons);
    // 6. Committed: answer, and let the firer start the run after this answer. The kick may run just before
    //    the door writes the 202 (both at the end of this turn), but its first steps are database round trips
    //    (lease expiry, the claim), so no command reaches a runner before the answer has been written.
    setImmediate(() => ctx.firer?.kick());
    return json({ deliveryId: verdict.delivery, status: 'accepted' }, { status: 202 });
  }
}

/** What the hook answers instead of 202, and why. */
const REFUSALS = {
  401: { description: 'signature missing or wrong, or timestamp more than 300 s from the server clock; empty body' },
  404: { description: 'unknown or disabled trigger; empty body' },
  408: { description: `the body did not arrive within TRIGGER_BODY_TIMEOUT_SECONDS` },
  409: { description: 'delivery id already used within 24 hours: code replayed' },
  413: { description: 'body over 256 KB' },
  415: { description: 'compressed body, or not application/json' },
  422: { description: 'payload refused by the placeholder rules: code invalid_payload, with every reason' },
  429: { description: "the trigger's rate limit is reached; nothing recorded" },
};

export const routes: Route[] = [
  route({ method: 'POST', path: '/hooks/:publicId', tag: 'triggers', access: 'public',
    summary: 'Inbound trigger (spec): signed JSON POST from another system; answers 202 once recorded, the run starts after the answer',
    rawBody: true,
    // Never refused here: the raw (still percent-encoded) segment; a malformed one is a plain 404 below.
    params: z.strictObject({ publicId: z.string().describe('The trigger URL\'s 24 characters') }),
    status: 202,
    responses: { 202: { description: 'verified and recorded', schema: hookAccepted }, ...REFUSALS },
    // Served by createHookDoor (app.ts) in the server; this route serves the app's fetch handler alone
    // (tests, and any request target the door leaves to the router), with the same handler.
    handler: async ({ params, request }, ctx) => {
      const answer = await hook(params.publicId, { headers: request.headers, hasBody: request.body !== null, read: (limit, ms) => readBody(request, limit, ms) }, ctx);
      return isEmpty(answer) ? emptyResponse(answer) : answer;
    },
  }),
];

// POST /hooks/github/<appPublicId> — a registered GitHub App's webhooks (docs/github-app.md). In order:
//   1. look the app up by SHA-256 of the id (malformed ids too: the same query for every id);
//   2. read the raw body, at most CODEHOST_BODY_LIMIT (413) within TRIGGER_BODY_TIMEOUT_SECONDS (408),
//      for a known app and an unknown one alike;
//   3. X-Hub-Signature-256 over the raw bytes with the app's decrypted webhook secret — a dummy secret
//      when the app is unknown or its secret does not decrypt, so the work is the same — in constant
//      time; then unknown → 404, wrong → 401, both with an empty body and nothing recorded;
//   4. X-GitHub-Delivery and X-GitHub-Event must be there (400 naming the header, nothing recorded);
//   5. in ONE statement: the delivery is inserted unless this app already has that delivery id (a
//      redelivery: 200 `duplicate`, nothing else happens), with its outcome — `ping`, `ignored` (an event
//      the collectors do not care about, or no repository), `invalid_payload` (signed but not a JSON
//      object), `no_project`, or `polling` — and the projects whose repo is the payload's
//      repository.full_name (case-insensitive) come back from the same statement;
//   6. what it says is applied to the server's state at once: an `issues` delivery to the issue queue
//      (queue.ts), pull_request and pull_request_review to the PR state (pull-deliveries.ts → pulls.ts,
//      which emits pr.* events on a transition); then 202 `accepted`; right after the answer, the checks
//      of a check_suite or check_run delivery's head commit are read with the App's token and observed
//      the same way, and collector.poll goes to each matched project's runner (polls.ts) as the safety
//      net, its answers recorded on the delivery.
import * as z from 'zod';
import { hookAccepted, hookDuplicate } from '../../protocol/api/codehost.ts';
import { route } from '../lib/context.ts';
import type { AppContext, Route } from '../lib/context.ts';
import { randomUUID } from 'node:crypto';
import { sql } from '../lib/db/index.ts';
import { badRequest, errorResponse, json } from '../lib/errors.ts';
import { readBody } from '../lib/http.ts';
import { PUBLIC_ID, publicIdHash, webhookSecretOf } from './apps.ts';
import type { AppRow } from './apps.ts';
import { pollProjects } from './polls.ts';
import { CHECK_EVENTS, PULL_EVENTS, checksDelivery, pullDelivery } from './pull-deliveries.ts';
import { issueCommentDelivery, issueDelivery } from './queue.ts';
import type { Target } from './polls.ts';
import { hookParams } from './schema.ts';
import { GITHUB_HEADERS, verifyGithubSignature } from './verify.ts';
import { empty as respondEmpty } from '../lib/respond.ts';

/**
 * GitHub caps payloads at 25 MB, but the events the collectors care about are far smaller (a push lists
 * at most 20 commits); a bigger one is refused (413) and the runner's regular poll picks the change up.
 */
export const CODEHOST_BODY_LIMIT = 1024 * 1024;
const DUMMY_SECRET = 'svc-dummy-secret-never-issued-as-an-app-webhook-secret';

/** Events about a repository's issues, pull requests, checks or branches: the collectors poll on these. */
export const POLLING_EVENTS = new Set([
  'issues',
  'issue_comment',
  'label',
  'pull_request',
  'pull_request_review',
  'pull_request_review_comment',
  'pull_request_review_thread',
  'check_run',
  'check_suite',
  'status',
  'push',
  'workflow_run',
]);

const DELIVERY = /^[\x21-\x7e]{1,100}$/;
const EVENT = /^[a-z_]{1,64}$/;
const payloadShape = z.object({
  action: z.string().max(100).optional(),
  repository: z.object({ full_name: z.string().regex(/^[A-Za-z0-9._-]{1,100}\/[A-Za-z0-9._-]{1,100}$/) }).optional(),
});

const empty = (status: number) => respondEmpty(status);

/** What a verified body says: the action, the repository, and whether it is a JSON object at all. */
function readPayload(raw: Uint8Array): { ok: boolean; action: string | null; repo: string | null; body: unknown } {
  let value: unknown;
  try {
    value = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(raw));
  } catch {
    return { ok: false, action: null, repo: null, body: null };
  }
  if (!value || typeof value !== 'object' || Array.isArray(value)) return { ok: false, action: null, repo: null, body: null };
  const parsed = payloadShape.safeParse(value);
  // A well-formed delivery with an odd field is still recorded; it simply names no repository.
  if (!parsed.success) return { ok: true, action: null, repo: null, body: value };
  return { ok: true, action: parsed.data.action ?? null, repo: parsed.data.repository?.full_name ?? null, body: value };
}

/**
 * Step 6: what the delivery says changes the server's state at once — an `issues` delivery the queue
 * (queue.ts), a pull request, review or check delivery the PR state (pulls.ts). A failure is logged,
 * not answered: the delivery is recorded, and the runner's poll (sent right after) is the safety net.
 */
async function apply(ctx: AppContext, app: AppRow, event: string, payload: ReturnType<typeof readPayload>, targets: Target[]): Promise<void> {
  try {
    const projectIds = targets.map((t) => t.projectId);
    if (event === 'issues') await issueDelivery(ctx.db, projectIds, payload.action, payload.body);
    if (event === 'issue_comment') await issueCommentDelivery(ctx.db, projectIds, payload.body);
    if (PULL_EVENTS.has(event)) await pullDelivery(ctx.db, projectIds, event, payload.action, payload.body);
  } catch (err) {
    ctx.log.error('could not apply a code-host delivery to the server state; the runner poll will', { appId: app.id, event, error: err instanceof Error ? err.message : String(err) });
  }
}

function verdictOf(event: string, payload: ReturnType<typeof readPayload>): 'ping' | 'ignored' | 'invalid_payload' | 'match' {
  if (!payload.ok) return 'invalid_payload';
  if (event === 'ping') return 'ping';
  return POLLING_EVENTS.has(event) && payload.repo ? 'match' : 'ignored';
}

/** Step 5: record once per (app, delivery id) and find the affected projects, as one statement. */
async function record(ctx: AppContext, app: AppRow, delivery: string, event: string, payload: ReturnType<typeof readPayload>) {
  const verdict = verdictOf(event, payload);
  const match = verdict === 'match';
  const id = randomUUID();
  const rows = await ctx.db.query<{ id: string; project_id: string | null; runner_id: string | null }>(sql`
    with matched as (
      select id, runner_id from projects where ${match}::boolean and lower(repo) = lower(${payload.repo}::text)
    ), ins as (
      insert into codehost_deliveries (id, app_id, delivery_id, event, action, repo, outcome)
      select ${id}::text, ${app.id}::text, ${delivery}::text, ${event}::text, ${payload.action}::text, ${payload.repo}::text,
             case when ${verdict}::text <> 'match' then ${verdict}::text when exists (select 1 from matched) then 'polling' else 'no_project' end
      on conflict (app_id, delivery_id) do nothing
      returning id)
    select ins.id, m.id as project_id, m.runner_id from ins left join matched m on true`);
  if (!rows.length) return null;
  const targets: Target[] = rows.filter((r) => r.project_id !== null).map((r) => ({ projectId: r.project_id!, runnerId: r.runner_id }));
  return { id, targets };
}

async function hook(appPublicId: string, request: Request, ctx: AppContext): Promise<Response> {
  // 1.
  const [found] = await ctx.db.query<AppRow>(sql`select * from codehost_apps where public_id_hash = ${publicIdHash(appPublicId)}`);
  const app = found && PUBLIC_ID.test(appPublicId) && found.public_id === appPublicId ? found : null;
  // 2. Throws 413 or 408 (the connection is closed after the answer).
  const raw = await readBody(request, CODEHOST_BODY_LIMIT, ctx.config.TRIGGER_BODY_TIMEOUT_SECONDS * 1000);
  // 3.
  const secret = app ? webhookSecretOf(app, ctx.keys.encryption) : null;
  if (app && secret === null) ctx.log.warn('a code-host app webhook secret does not decrypt: rotate it (docs/github-app.md)', { appId: app.id });
  const ok = verifyGithubSignature(request.headers.get(GITHUB_HEADERS.signature), raw, secret ?? DUMMY_SECRET);
  if (!app) return empty(404);
  if (!ok || secret === null) return empty(401);
  // 4.
  const delivery = request.headers.get(GITHUB_HEADERS.delivery) ?? '';
  const event = request.headers.get(GITHUB_HEADERS.event) ?? '';
  const bad: Record<string, string> = {};
  if (!DELIVERY.test(delivery)) bad[GITHUB_HEADERS.delivery] = 'is required: 1–100 visible ASCII characters';
  if (!EVENT.test(event)) bad[GITHUB_HEADERS.event] = 'is required: an event name such as push';
  if (Object.keys(bad).length) return errorResponse(badRequest('invalid_headers', `missing or malformed: ${Object.keys(bad).join(', ')}`, bad));
  // 5.
  const payload = readPayload(raw);
  const recorded = await record(ctx, app, delivery, event, payload);
  if (!recorded) return json({ deliveryId: delivery, status: 'duplicate' });
  // 6. The state at once; the poll after the answer.
  if (recorded.targets.length) await apply(ctx, app, event, payload, recorded.targets);
  if (recorded.targets.length) setImmediate(() => void pollProjects(ctx, recorded.id, recorded.targets));
  if (recorded.targets.length && CHECK_EVENTS.has(event) && payload.repo) {
    const deps = { db: ctx.db, key: ctx.keys.encryption, clock: ctx.clock, log: ctx.log };
    setImmediate(() => void checksDelivery(deps, app, payload.repo!, recorded.targets.map((t) => t.projectId), event, payload.body));
  }
  if (!payload.ok) return errorResponse(badRequest('invalid_payload', 'the body is not a JSON object; the delivery was recorded as invalid_payload'));
  return json({ deliveryId: delivery, status: 'accepted', projects: recorded.targets.length }, { status: 202 });
}

export const routes: Route[] = [
  route({ method: 'POST', path: '/hooks/github/:appPublicId', tag: 'codehost', access: 'public',
    summary: "A registered GitHub App's webhooks: X-Hub-Signature-256 verified, each X-GitHub-Delivery recorded once, the issue queue and pull request state updated at once, collector.poll sent to the runner of each project of the repository",
    rawBody: true,
    // Never refused here: a malformed id is hashed and looked up like any other, and answers 404 below.
    params: hookParams,
    status: 202,
    responses: {
      200: { description: 'a delivery id this app already sent: ignored', schema: hookDuplicate },
      202: { description: 'verified and recorded; collector.poll goes out right after', schema: hookAccepted },
      400: { description: 'X-GitHub-Delivery or X-GitHub-Event missing (nothing recorded: invalid_headers), or a body that is not a JSON object (recorded: invalid_payload)' },
      401: { description: 'signature missing or wrong; empty body, nothing recorded' },
      404: { description: 'unknown app; empty body' },
      408: { description: 'the body did not arrive within TRIGGER_BODY_TIMEOUT_SECONDS' },
      413: { description: 'body over 1 MB' },
    },
    handler: ({ params, request }, ctx) => hook(params.appPublicId, request, ctx),
  }),
];

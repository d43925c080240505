// POST /hooks/gitlab/<publicId> — a GitLab project's webhook (issue 42; docs/gitlab.md "Webhook"). In order:
//   1. the project's code host looked up by SHA-256 of the id (the same query for every id);
//   2. the raw body, at most GITLAB_BODY_LIMIT (256 KB; 413) within TRIGGER_BODY_TIMEOUT_SECONDS (408);
//   3. X-Gitlab-Token compared in constant time with the decrypted secret (a dummy one when the id is
//      unknown, so the work is the same): unknown → 404; wrong → 401, recorded as `unauthorized`;
//   4. X-Gitlab-Event and X-Gitlab-Event-UUID must be there (400 naming the header);
//   5. one insert per (project, X-Gitlab-Event-UUID): a redelivery answers 200 `duplicate`;
//   6. Issue, Merge Request, Pipeline and Note hooks are applied to the server's queue and pull request
//      state before the answer (gitlab-apply.ts: the arbiters emit a pr.* event on a transition only);
//      then these and Job and Push hooks send collector.poll to the project's runner (polls.ts, the
//      answers recorded on the delivery), the safety net: the same change seen by the hook and by a poll
//      is one event. Other events are recorded as `ignored`.
import { randomUUID } from 'node:crypto';
import { hookAccepted, hookDuplicate } from '../../protocol/api/codehost.ts';
import { route } from '../lib/context.ts';
import type { AppContext, Route } from '../lib/context.ts';
import { constantTimeEqual, decryptSecret } from '../lib/crypto.ts';
import { sql } from '../lib/db/index.ts';
import { badRequest, errorResponse, json } from '../lib/errors.ts';
import { readBody } from '../lib/http.ts';
import { empty } from '../lib/respond.ts';
import { PUBLIC_ID } from './apps.ts';
import { gitlabPublicIdHash, gitlabSecretAad } from './gitlab-config.ts';
import type { CodehostRow } from './gitlab-config.ts';
import { applyGitlabHook } from './gitlab-apply.ts';
import { pollProjects } from './polls.ts';
import { hookParams } from './schema.ts';

export const GITLAB_BODY_LIMIT = 256 * 1024;
const DUMMY = 'svc-dummy-gitlab-secret-never-issued-0000000000000';
/** GitLab's X-Gitlab-Event values the collectors act on. */
export const GITLAB_POLLING_EVENTS = new Set(['Issue Hook', 'Confidential Issue Hook', 'Merge Request Hook', 'Pipeline Hook', 'Job Hook', 'Note Hook', 'Confidential Note Hook', 'Push Hook']);
const UUID = /^[\x21-\x7e]{1,100}$/;
const EVENT = /^[A-Za-z ]{1,64}$/;

async function hook(publicId: string, request: Request, ctx: AppContext): Promise<Response> {
  const [found] = await ctx.db.query<CodehostRow & { runner_id: string | null; public_id_hash: string }>(sql`
    select c.*, p.runner_id from project_codehosts c join projects p on p.id = c.project_id where c.public_id_hash = ${gitlabPublicIdHash(publicId)}`);
  const row = found && PUBLIC_ID.test(publicId) && found.public_id === publicId ? found : null;
  const raw = await readBody(request, GITLAB_BODY_LIMIT, ctx.config.TRIGGER_BODY_TIMEOUT_SECONDS * 1000);
  let secret: string | null = null;
  try {
    secret = row ? decryptSecret(ctx.keys.encryption, row.webhook_secret_ciphertext, gitlabSecretAad(row.project_id)) : null;
  } catch {
    ctx.log.warn('a GitLab webhook secret does not decrypt: set the code host again (docs/gitlab.md)', { projectId: row?.project_id });
  }
  const ok = constantTimeEqual(request.headers.get('x-gitlab-token') ?? '', secret ?? DUMMY);
  const event = request.headers.get('x-gitlab-event') ?? '';
  const uuid = request.headers.get('x-gitlab-event-uuid') ?? '';
  if (!row) return empty(404);
  if (!ok || secret === null) {
    await ctx.db.query(sql`insert into codehost_deliveries (id, project_id, event, outcome) values (${randomUUID()}, ${row.project_id}, ${EVENT.test(event) ? event : 'unknown'}, 'unauthorized')`);
    return empty(401);
  }
  const bad: Record<string, string> = {};
  if (!UUID.test(uuid)) bad['X-Gitlab-Event-UUID'] = 'is required: 1–100 visible ASCII characters';
  if (!EVENT.test(event)) bad['X-Gitlab-Event'] = 'is required: an event name such as Merge Request Hook';
  if (Object.keys(bad).length) return errorResponse(badRequest('invalid_headers', `missing or malformed: ${Object.keys(bad).join(', ')}`, bad));
  const polling = GITLAB_POLLING_EVENTS.has(event);
  const id = randomUUID();
  const inserted = await ctx.db.query(sql`
    insert into codehost_deliveries (id, project_id, delivery_id, event, repo, outcome)
    values (${id}, ${row.project_id}, ${uuid}, ${event}, ${row.project_path}, ${polling ? 'polling' : 'ignored'})
    on conflict (project_id, delivery_id) where project_id is not null do nothing returning id`);
  if (!inserted.length) return json({ deliveryId: uuid, status: 'duplicate' });
  if (polling) {
    await apply(ctx, row.project_id, event, raw);
    setImmediate(() => void pollProjects(ctx, id, [{ projectId: row.project_id, runnerId: row.runner_id }]));
  }
  return json({ deliveryId: uuid, status: 'accepted', projects: polling ? 1 : 0 }, { status: 202 });
}

/** Step 6: what the hook says, applied at once (gitlab-apply.ts); a failure is logged, the poll still goes. */
async function apply(ctx: AppContext, projectId: string, event: string, raw: Uint8Array): Promise<void> {
  let body: unknown;
  try {
    body = JSON.parse(new TextDecoder().decode(raw));
  } catch {
    return; // not JSON: recorded, and the runner's poll reads the state
  }
  try {
    await applyGitlabHook(ctx.db, projectId, event, body);
  } catch (err) {
    ctx.log.error('could not apply a GitLab hook to the server state; the runner poll will', { projectId, event, error: err instanceof Error ? err.message : String(err) });
  }
}

export const routes: Route[] = [
  route({ method: 'POST', path: '/hooks/gitlab/:appPublicId', tag: 'codehost', access: 'public',
    summary: "A GitLab project's webhook: X-Gitlab-Token verified in constant time, each X-Gitlab-Event-UUID recorded once; issue, merge request, pipeline and note events applied to the queue and pull request state at once, and collector.poll sent to the project's runner as the safety net",
    rawBody: true,
    params: hookParams,
    status: 202,
    responses: {
      200: { description: 'an X-Gitlab-Event-UUID this project already received: ignored', schema: hookDuplicate },
      202: { description: 'verified and recorded; collector.poll goes out right after', schema: hookAccepted },
      400: { description: 'X-Gitlab-Event or X-Gitlab-Event-UUID missing' },
      401: { description: 'X-Gitlab-Token missing or wrong; empty body; recorded as unauthorized' },
      404: { description: 'unknown webhook id; empty body' },
      408: { description: 'the body did not arrive within TRIGGER_BODY_TIMEOUT_SECONDS' },
      413: { description: 'body over 256 KB' },
    },
    handler: ({ params, request }, ctx) => hook(params.appPublicId, request, ctx),
  }),
];

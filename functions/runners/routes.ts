// Runner management, pairing and commands over HTTP.
import { randomUUID } from 'node:crypto';
import * as z from 'zod';
import { commandDone, commandFailed, pairAnswer, pairingCode, runnerCreated, runnerDetail, runnerList, runnerSelf, runnerView } from '../../protocol/api/runners.ts';
import type { RunnerView } from '../../protocol/api/runners.ts';
import { COMMANDS, COMMAND_NAMES, isCommandName } from '../../protocol/commands.ts';
import type { CommandName } from '../../protocol/commands.ts';
import { CLOSE, pairRequest, runnerTags } from '../../protocol/frames.ts';
import { compareVersions } from '../../protocol/version.ts';
import { appendAudit, audited } from '../audit/audit.ts';
import { forbidden, requireProjectRole } from '../auth/auth.ts';
import { recordActivity } from '../activity/record.ts';
import { budgetExceeded } from '../cost/budget.ts';
import { checkSignInAllowed, recordSignInFailure } from '../auth/ratelimit.ts';
import { route } from '../lib/context.ts';
import type { AppContext, CommandOutcome, Principal, Route, RouteDef } from '../lib/context.ts';
import { sql } from '../lib/db/index.ts';
import type { Queryable } from '../lib/db/index.ts';
import { sha256Hex } from '../lib/crypto.ts';
import { HttpError, badRequest, conflict, json, notFound } from '../lib/errors.ts';
import { idParam, projectRoute } from '../lib/project-routes.ts';
import { empty } from '../lib/respond.ts';
import { parseWith } from '../lib/http.ts';
import { servedRunnerVersion } from './install.ts';
import { createPairingCode, redeemPairingCode } from './pairing.ts';
import { remedy } from './presence.ts';
import { runtimeState, storedProfiles } from './profiles.ts';
import {
  insertRunner,
  lastEvents,
  listRunners,
  memberOnRunner,
  projectRunner,
  removeRunner,
  revokeRunner,
  runProject,
  runnerByToken,
  runnerExists,
  runnerProjects,
  runnerRow,
  sameNameCount,
  setRunnerTags,
  normalTags,
  poolProjects,
} from './queries.ts';
import type { RunnerRow } from './queries.ts';

const TAG = 'runners';
const projectId = idParam('project');
const one = z.strictObject({ runnerId: idParam('runner') });
const commandBody = z.strictObject({
  name: z.string().refine(isCommandName, { message: `must be one of the allowlist: ${COMMAND_NAMES.join(', ')}` }),
  args: z.record(z.string(), z.unknown()).default({}),
});
/** What a command answers: 200 with the runner's data, 502 with the runner's error. */
const commandResponses = {
  200: { description: "the runner's answer", schema: commandDone },
  502: { description: 'the runner refused or failed the command', schema: commandFailed },
};

/** A route of one runner (/api/runners/:runnerId…), for instance admins. */
const adminRunnerRoute = <B extends z.ZodType | undefined = undefined>(def: Omit<RouteDef<typeof one, undefined, B>, 'tag' | 'access' | 'params'>): Route =>
  route<typeof one, undefined, B>({ ...def, tag: TAG, access: 'instanceAdmin', params: one });

const iso = (d: Date | null) => (d ? new Date(d).toISOString() : null);
/**
 * A runner row as the API shows it. `updateAvailable`: the server serves a newer runner bundle than the
 * version the runner reported (in its hello, or its version header at connect); unknown versions never.
 */
const toRunner = (r: RunnerRow, bundleVersion: string | null): RunnerView => {
  const base = {
    id: r.id,
    name: r.name,
    hostname: r.hostname,
    version: r.version,
    updateAvailable: Boolean(bundleVersion && /^\d+\.\d+/.test(r.version) && compareVersions(r.version, bundleVersion) < 0),
    target: r.target,
    capabilities: r.capabilities,
    pairedAt: iso(r.paired_at),
    revokedAt: iso(r.revoked_at),
    lastSeenAt: iso(r.last_seen_at),
    status: (r.revoked_at ? 'revoked' : !r.paired_at ? 'unpaired' : r.online ? 'online' : 'offline') as 'revoked' | 'unpaired' | 'online' | 'offline',
  };
  const profiles = storedProfiles(r.profiles);
  const reported = { profiles, agentRuntime: runtimeState(profiles), profilesReportedAt: iso(r.profiles_reported_at) };
  const pool = { tags: r.tags ?? [], maxConcurrentRuns: r.max_concurrent_runs ?? null, runningRuns: r.running_runs ?? null };
  return { ...base, ...pool, remedy: base.status === 'online' ? null : remedy({ paired: Boolean(r.paired_at), revoked: Boolean(r.revoked_at), lastSeenAt: base.lastSeenAt }), ...reported };
};

async function getRunner(db: Queryable, id: string): Promise<RunnerRow> {
  const row = await runnerRow(db, id);
  if (!row) throw notFound('no such runner');
  return row;
}

/** Other runners with the same name (case-insensitive): a warning, since the name is how people tell them apart. */
async function duplicateNameWarnings(db: Queryable, name: string, except: string): Promise<string[]> {
  if (!name) return [];
  const n = await sameNameCount(db, name, except);
  return n ? [`${n} other runner(s) are also named ${name}: give each machine its own name to tell them apart`] : [];
}

/**
 * Who may send a command (docs/security.md, "Runners and project roots"). A project command is checked
 * against the caller's role on the project named in its arguments, which must be served by this runner
 * (and a run it names must be that project's). A runner-wide command — one that does not act inside a
 * single project's root (ping, describe, inspect any path, collector poll, the skill catalog) — is
 * checked against the caller's rights on the RUNNER: runners have no owners, so instance admins only.
 * Others get 403 when they can see the runner through a project of theirs, else 404.
 */
async function authorizeCommand(ctx: AppContext, principal: Principal, runner: string, name: CommandName, args: Record<string, unknown>): Promise<void> {
  const spec = COMMANDS[name];
  if (spec.project) {
    const pid = parseWith(z.object({ projectId }), args, 'invalid_args').projectId;
    await requireProjectRole(ctx.db, principal, pid, spec.minRole);
    if ((await projectRunner(ctx.db, pid)) !== runner) throw badRequest('project_not_on_runner', `project ${pid} is not served by this runner`);
    if (name === 'skill.cancel' && typeof args.runId === 'string') {
      const runOf = await runProject(ctx.db, args.runId);
      if (runOf !== undefined && runOf !== pid) throw notFound('no such run in this project');
    }
    return;
  }
  if (principal.user.instanceAdmin) return;
  if (!(await memberOnRunner(ctx.db, runner, principal.user.id))) throw new HttpError(404, 'not_found', 'no such runner');
  throw forbidden(`${name} acts on the whole runner, not one project: it needs an instance admin`);
}
/**
 * An approval or a request for changes done through svc: pr.approved / pr.changes_requested in the
 * activity feed, with the pull request's address from the feed's own pr.* items (never the comment).
 */
async function reviewed(db: Queryable, principal: Principal, name: 'pr.approve' | 'pr.requestChanges', args: { projectId: string; number: number }) {
  const [seen] = await db.query<{ url: string }>(sql`
    select data -> 'pr' ->> 'url' as url from activity_items
     where project_id = ${args.projectId} and kind like 'pr.%' and data -> 'pr' ->> 'number' = ${String(args.number)} and data -> 'pr' ->> 'url' is not null
     order by id desc limit 1`);
  await recordActivity(db, {
    kind: name === 'pr.approve' ? 'pr.approved' : 'pr.changes_requested',
    projectId: args.projectId,
    data: { pr: { number: args.number, ...(seen ? { url: seen.url } : {}) }, by: principal.user.id, byName: principal.user.name },
  });
}

/**
 * Send a command as `principal`, checked as the commands API checks it (who may, its arguments, the
 * budget), with what svc records of a review done through it. The commands API and the action links
 * (functions/act/actions.ts) send commands through this one function.
 */
export async function sendCommandAs(ctx: AppContext, principal: Principal, runner: string, name: CommandName, rawArgs: Record<string, unknown>): Promise<CommandOutcome> {
  await authorizeCommand(ctx, principal, runner, name, rawArgs);
  const args = parseWith(COMMANDS[name].args, rawArgs, 'invalid_args');
  // A project whose budget is set to stop and spent starts no new orchestrator round (docs/cost.md).
  if (name === 'orchestrator.start' && (await budgetExceeded(ctx.db, (args as { projectId: string }).projectId))) {
    throw new HttpError(409, 'budget_exceeded', "the project's monthly budget is spent and set to stop: no new orchestrator round starts until next month or a higher budget");
  }
  const outcome = await ctx.hub.command(runner, name, args, principal.user.id);
  if (outcome.status === 'done' && (name === 'pr.approve' || name === 'pr.requestChanges')) await reviewed(ctx.db, principal, name, args as { projectId: string; number: number });
  return outcome;
}

/**
 * An approval sent through the commands API is audited (`pr.approve`, via `page` from the admin pages'
 * session, `api` with a token); with an action link's (functions/act/, via `link`) and a merge's, the
 * record makes a step of the pull request's record (sql/0038, functions/codehost/record.ts).
 */
async function auditApproval(ctx: AppContext, principal: Principal, args: Record<string, unknown>, requestId: string): Promise<void> {
  const { projectId: pid, number } = args as { projectId: string; number: number };
  await ctx.db.transaction((tx) =>
    appendAudit(tx, { actor: principal, action: 'pr.approve', target: { type: 'project', id: pid }, diff: { via: principal.via === 'session' ? 'page' : 'api', number, target: { projectId: pid, number } }, requestId }),
  );
}

async function runCommand(ctx: AppContext, principal: Principal, runner: string, name: CommandName, rawArgs: Record<string, unknown>, requestId: string): Promise<Response> {
  const outcome = await sendCommandAs(ctx, principal, runner, name, rawArgs);
  if (outcome.status === 'done' && name === 'pr.approve') await auditApproval(ctx, principal, rawArgs, requestId);
  switch (outcome.status) {
    case 'done':
      return json({ name, ok: true, data: outcome.data });
    case 'failed':
      return json({ name, ok: false, error: outcome.error }, { status: 502 });
    case 'offline':
      throw new HttpError(503, 'runner_offline', `the runner is offline; ${name} was not sent`);
    case 'timeout':
      throw new HttpError(504, 'command_timeout', `${name} got no answer within ${COMMANDS[name].timeoutMs / 1000} s`);
  }
}

export const routes: Route[] = [
  route({ method: 'GET', path: '/api/runners',
    summary:
      'Runners with their status (online, offline, unpaired, revoked), last seen, a remedy when not online, and updateAvailable when ' +
      'the runner bundle this server serves (bundleVersion; null when it serves none) is newer than the version the runner reported',
    tag: TAG,
    access: 'instanceAdmin',
    responses: { 200: { description: 'the runners and the bundle version served', schema: runnerList } },
    async handler(_input, ctx) {
      const rows = await listRunners(ctx.db);
      const bundleVersion = await servedRunnerVersion(ctx.config);
      return json({ runners: rows.map((r) => toRunner(r, bundleVersion)), bundleVersion });
    },
  }),
  route({ method: 'POST', path: '/api/runners', tag: TAG, access: 'instanceAdmin', status: 201,
    summary: 'Add a runner: answers a one-time pairing code (15 minutes) for `svc-runner pair`; without a name it takes the hostname when it pairs',
    responses: { 201: { description: 'the new runner and its pairing code', schema: runnerCreated } },
    body: z.strictObject({ name: z.string().trim().max(100).default('') }),
    async handler({ principal, body, requestId }, ctx) {
      const out = await audited(
        ctx.db,
        (r: { runner: { id: string } }) => ({ actor: principal!, action: 'runner.create', target: { type: 'runner', id: r.runner.id }, diff: { after: body }, requestId }),
        async (tx) => {
          const id = randomUUID();
          await insertRunner(tx, id, body.name);
          const code = await createPairingCode(tx, id, principal!.user.id);
          return { runner: { id, name: body.name }, code: code.code, expiresAt: code.expiresAt.toISOString(), warnings: await duplicateNameWarnings(tx, body.name, id) };
        },
      );
      return json(out, { status: 201, headers: { 'cache-control': 'no-store' } });
    },
  }),
  adminRunnerRoute({ method: 'POST', path: '/api/runners/:runnerId/pairing-code', status: 201,
    summary: 'A new pairing code for an existing runner (re-pairing replaces its token; its old socket closes with 4409)',
    responses: { 201: { description: 'the pairing code', schema: pairingCode } },
    async handler({ principal, params, requestId }, ctx) {
      const code = await audited(ctx.db, { actor: principal!, action: 'runner.pairing_code', target: { type: 'runner', id: params.runnerId }, requestId }, async (tx) => {
        if (!(await runnerExists(tx, params.runnerId))) throw notFound('no such runner');
        return createPairingCode(tx, params.runnerId, principal!.user.id);
      });
      return json({ code: code.code, expiresAt: code.expiresAt.toISOString() }, { status: 201, headers: { 'cache-control': 'no-store' } });
    },
  }),
  adminRunnerRoute({ method: 'GET', path: '/api/runners/:runnerId',
    summary: 'One runner: status, version, capabilities, the agent runtimes it reported (profiles), the projects it serves, the projects whose pool it is a member of, and its last 20 events (kind and time)',
    responses: { 200: { description: 'the runner', schema: runnerDetail } },
    async handler({ params }, ctx) {
      const r = await getRunner(ctx.db, params.runnerId);
      const projects = await runnerProjects(ctx.db, r.id);
      const pools = await poolProjects(ctx.db, r.id);
      const events = await lastEvents(ctx.db, r.id, 20);
      const bundleVersion = await servedRunnerVersion(ctx.config);
      return json({
        ...toRunner(r, bundleVersion),
        bundleVersion,
        projects: projects.map((p) => ({ id: p.id, name: p.name, rootPath: p.root_path })),
        poolProjects: pools.map((p) => ({ id: p.id, name: p.name, rootPath: p.root_path })),
        lastEvents: events.map((e) => ({ kind: e.kind, source: e.source, ts: iso(e.ts), receivedAt: iso(e.received_at) })),
      });
    },
  }),
  adminRunnerRoute({ method: 'PATCH', path: '/api/runners/:runnerId',
    summary: "Set a runner's tags (replacing them; stored each once, sorted): a pool target's targetTags must all be among a runner's tags for it to take the target's runs",
    responses: { 200: { description: 'the runner', schema: runnerView } },
    body: z.strictObject({ tags: runnerTags }),
    async handler({ principal, params, body, requestId }, ctx) {
      await audited(
        ctx.db,
        (before: string[]) => ({ actor: principal!, action: 'runner.update', target: { type: 'runner', id: params.runnerId }, diff: { before: { tags: before }, after: { tags: normalTags(body.tags) } }, requestId }),
        async (tx) => {
          const before = await getRunner(tx, params.runnerId);
          await setRunnerTags(tx, params.runnerId, body.tags);
          return before.tags;
        },
      );
      return json(toRunner(await getRunner(ctx.db, params.runnerId), await servedRunnerVersion(ctx.config)));
    },
  }),
  adminRunnerRoute({ method: 'DELETE', path: '/api/runners/:runnerId', status: 204,
    summary: 'Revoke a paired runner (its token stops working, its socket closes with 4401); an unpaired or revoked one is removed from the list instead',
    async handler({ principal, params, requestId }, ctx) {
      const before = await getRunner(ctx.db, params.runnerId);
      if (before.paired_at && !before.revoked_at) {
        await audited(ctx.db, { actor: principal!, action: 'runner.revoke', target: { type: 'runner', id: params.runnerId }, requestId }, async (tx) => {
          // The token's hash is kept (the hub refuses it, revoked_at being set) so the machine can be told it was revoked.
          if (!(await revokeRunner(tx, params.runnerId))) throw notFound('no such runner');
        });
        await ctx.hub.disconnect(params.runnerId, CLOSE.unauthorized);
        return empty(204);
      }
      await audited(ctx.db, { actor: principal!, action: 'runner.remove', target: { type: 'runner', id: params.runnerId }, diff: { name: before.name }, requestId }, async (tx) => {
        const bound = await runnerProjects(tx, params.runnerId);
        if (bound.length) throw conflict('runner_in_use', `projects ${bound.map((p) => p.name).join(', ')} still use this runner: move them to another runner first`);
        const pooled = await poolProjects(tx, params.runnerId);
        if (pooled.length) throw conflict('runner_in_use', `projects ${pooled.map((p) => p.name).join(', ')} still have this runner in their pool: remove it there first`);
        if (!(await removeRunner(tx, params.runnerId))) throw conflict('runner_changed', 'the runner was paired meanwhile: reload and try again');
      });
      return empty(204);
    },
  }),
  route({ method: 'POST', path: '/runners/pair', tag: TAG, access: 'public',
    summary: 'Runner pairing: trade a one-time code for the runner id and token (spec: Runner pairing)',
    responses: { 200: { description: "the runner's id and token", schema: pairAnswer } },
    body: pairRequest,
    bodyLimit: 16 * 1024,
    async handler({ body, clientAddress, requestId }, ctx) {
      // Guessing codes is limited like guessing passwords (per address).
      await checkSignInAllowed(ctx.db, `pairing:${clientAddress}`, clientAddress);
      const paired = await ctx.db.transaction(async (tx) => {
        const out = await redeemPairingCode(tx, body.code, body);
        if (out) {
          await appendAudit(tx, { actor: { label: `runner:${out.runnerId}` }, action: 'runner.pair', target: { type: 'runner', id: out.runnerId }, diff: { hostname: body.hostname, repaired: out.repaired, ...(body.tags ? { tags: normalTags(body.tags) } : {}) }, requestId });
        }
        return out;
      });
      if (!paired) {
        await recordSignInFailure(ctx.db, `pairing:${clientAddress}`, clientAddress);
        throw new HttpError(400, 'invalid_code', 'this pairing code is unknown, used or expired; ask an admin for a new one');
      }
      if (paired.repaired) await ctx.hub.disconnect(paired.runnerId, CLOSE.replaced);
      return json({ runnerId: paired.runnerId, token: paired.token }, { headers: { 'cache-control': 'no-store' } });
    },
  }),
  route({ method: 'GET', path: '/runners/self', tag: TAG, access: 'public',
    summary: "A runner asks whether its token is still accepted (`svc-runner status`): 200, or 401 runner_revoked / invalid_token",
    responses: { 200: { description: 'the token is accepted', schema: runnerSelf } },
    async handler({ request }, ctx) {
      const m = /^Bearer\s+(svc_rt_[A-Za-z0-9_-]{16,200})$/.exec(request.headers.get('authorization') ?? '');
      const runner = m ? await runnerByToken(ctx.db, sha256Hex(m[1])) : null;
      if (!runner) throw new HttpError(401, 'invalid_token', 'this token is not accepted: the runner was paired again elsewhere, or the token is unknown; pair again');
      if (runner.revoked_at) throw new HttpError(401, 'runner_revoked', 'this runner was revoked: pair it again with a new code');
      return json({ runnerId: runner.id, name: runner.name }, { headers: { 'cache-control': 'no-store' } });
    },
  }),
  route({ method: 'POST', path: '/api/runners/:runnerId/commands', tag: TAG, access: 'user', params: one,
    summary: 'Send an allowlisted command to a runner and wait for its answer (504 after the command timeout)',
    responses: commandResponses,
    body: commandBody,
    bodyLimit: 256 * 1024,
    async handler({ principal, params, body, requestId }, ctx) {
      if (!(await runnerExists(ctx.db, params.runnerId))) throw notFound('no such runner');
      return runCommand(ctx, principal!, params.runnerId, body.name as CommandName, body.args, requestId);
    },
  }),
  projectRoute('viewer', { method: 'POST', path: '/commands', tag: TAG,
    summary: "Send a project command to the project's runner (projectId is filled in)",
    responses: commandResponses,
    body: commandBody,
    bodyLimit: 256 * 1024,
    async handler({ principal, params, body, requestId }, ctx) {
      const name = body.name as CommandName;
      if (!COMMANDS[name].project) throw badRequest('not_a_project_command', `${name} acts on a runner, not a project: use /api/runners/:runnerId/commands`);
      const runnerId = await projectRunner(ctx.db, params.projectId);
      if (!runnerId) throw new HttpError(409, 'no_runner', 'this project has no runner yet');
      return runCommand(ctx, principal!, runnerId, name, { ...body.args, projectId: params.projectId }, requestId);
    },
  }),
];

// Runner management, pairing and commands over HTTP.
import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import { COMMANDS, COMMAND_NAMES, isCommandName } from '../../protocol/commands.ts';
import type { CommandName } from '../../protocol/commands.ts';
import { CLOSE, pairRequest } from '../../protocol/frames.ts';
import { appendAudit, audited } from '../audit/audit.ts';
import { forbidden, requireProjectRole, roleRank } from '../auth/auth.ts';
import { checkSignInAllowed, recordSignInFailure } from '../auth/ratelimit.ts';
import { route } from '../lib/context.ts';
import type { AppContext, Principal, Role, Route } from '../lib/context.ts';
import { sql } from '../lib/db/index.ts';
import { HttpError, badRequest, json, notFound } from '../lib/errors.ts';
import { parseWith } from '../lib/http.ts';
import { createPairingCode, redeemPairingCode } from './pairing.ts';
import { onlineSql, remedy } from './presence.ts';

const runnerId = z.string().regex(/^[A-Za-z0-9-]{1,64}$/, { message: 'must be a runner id' });
const projectId = runnerId;
const commandBody = z.strictObject({
  name: z.string().refine(isCommandName, { message: `must be one of the allowlist: ${COMMAND_NAMES.join(', ')}` }),
  args: z.record(z.string(), z.unknown()).default({}),
});

interface RunnerRow {
  id: string;
  name: string;
  hostname: string;
  version: string;
  target: string;
  capabilities: string[];
  paired_at: Date | null;
  revoked_at: Date | null;
  last_seen_at: Date | null;
  online: boolean;
}
const iso = (d: Date | null) => (d ? new Date(d).toISOString() : null);
const toRunner = (r: RunnerRow) => {
  const base = {
    id: r.id,
    name: r.name,
    hostname: r.hostname,
    version: r.version,
    target: r.target,
    capabilities: r.capabilities,
    pairedAt: iso(r.paired_at),
    revokedAt: iso(r.revoked_at),
    lastSeenAt: iso(r.last_seen_at),
    status: r.revoked_at ? 'revoked' : !r.paired_at ? 'unpaired' : r.online ? 'online' : 'offline',
  };
  return { ...base, remedy: base.status === 'online' ? null : remedy({ paired: Boolean(r.paired_at), revoked: Boolean(r.revoked_at), lastSeenAt: base.lastSeenAt }) };
};
const selectRunners = sql`select r.*, ${onlineSql} as online from runners r`;

/**
 * The command's minimum role, checked where it applies: on the project named in the arguments (which
 * must be served by this runner), or — for runner-wide commands — on some project this runner serves.
 */
async function authorizeCommand(ctx: AppContext, principal: Principal, runner: string, name: CommandName, args: Record<string, unknown>): Promise<void> {
  const spec = COMMANDS[name];
  let min: Role = spec.minRole;
  if (name === 'skill.install' && args.profileId !== undefined) min = 'admin'; // spec: profile installs need admin
  if (spec.project) {
    const pid = parseWith(z.object({ projectId }), args, 'invalid_args').projectId;
    await requireProjectRole(ctx.db, principal, pid, min);
    const [p] = await ctx.db.query<{ runner_id: string | null }>(sql`select runner_id from projects where id = ${pid}`);
    if (p.runner_id !== runner) throw badRequest('project_not_on_runner', `project ${pid} is not served by this runner`);
    return;
  }
  if (principal.user.instanceAdmin) return;
  const roles = await ctx.db.query<{ role: Role }>(sql`
    select m.role from project_members m join projects p on p.id = m.project_id
     where p.runner_id = ${runner} and m.user_id = ${principal.user.id}`);
  if (!roles.length) throw new HttpError(404, 'not_found', 'no such runner');
  if (!roles.some((r) => roleRank(r.role) >= roleRank(min))) throw forbidden(`${name} needs the ${min} role on a project of this runner`);
}

async function runCommand(ctx: AppContext, principal: Principal, runner: string, name: CommandName, rawArgs: Record<string, unknown>): Promise<Response> {
  await authorizeCommand(ctx, principal, runner, name, rawArgs);
  const args = parseWith(COMMANDS[name].args, rawArgs, 'invalid_args');
  const outcome = await ctx.hub.command(runner, name, args, principal.user.id);
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
  route({
    method: 'GET',
    path: '/api/runners',
    summary: 'Runners with their status (online, offline, unpaired, revoked), last seen, and a remedy when not online',
    tag: 'runners',
    access: 'instanceAdmin',
    async handler(_input, ctx) {
      const rows = await ctx.db.query<RunnerRow>(sql`${selectRunners} order by lower(r.name)`);
      return json({ runners: rows.map(toRunner) });
    },
  }),
  route({
    method: 'POST',
    path: '/api/runners',
    summary: 'Add a runner: answers a one-time pairing code (15 minutes) for `svc-runner pair`',
    tag: 'runners',
    access: 'instanceAdmin',
    status: 201,
    body: z.strictObject({ name: z.string().trim().min(1).max(100) }),
    async handler({ principal, body, requestId }, ctx) {
      const out = await audited(
        ctx.db,
        (r: { runner: { id: string } }) => ({ actor: principal!, action: 'runner.create', target: { type: 'runner', id: r.runner.id }, diff: { after: body }, requestId }),
        async (tx) => {
          const id = randomUUID();
          await tx.query(sql`insert into runners (id, name) values (${id}, ${body.name})`);
          const code = await createPairingCode(tx, id, principal!.user.id);
          return { runner: { id, name: body.name }, code: code.code, expiresAt: code.expiresAt.toISOString() };
        },
      );
      return json(out, { status: 201, headers: { 'cache-control': 'no-store' } });
    },
  }),
  route({
    method: 'POST',
    path: '/api/runners/:runnerId/pairing-code',
    summary: 'A new pairing code for an existing runner (re-pairing replaces its token; its old socket closes with 4409)',
    tag: 'runners',
    access: 'instanceAdmin',
    status: 201,
    params: z.strictObject({ runnerId }),
    async handler({ principal, params, requestId }, ctx) {
      const code = await audited(ctx.db, { actor: principal!, action: 'runner.pairing_code', target: { type: 'runner', id: params.runnerId }, requestId }, async (tx) => {
        const [r] = await tx.query(sql`select 1 from runners where id = ${params.runnerId}`);
        if (!r) throw notFound('no such runner');
        return createPairingCode(tx, params.runnerId, principal!.user.id);
      });
      return json({ code: code.code, expiresAt: code.expiresAt.toISOString() }, { status: 201, headers: { 'cache-control': 'no-store' } });
    },
  }),
  route({
    method: 'DELETE',
    path: '/api/runners/:runnerId',
    summary: 'Revoke a runner: its token stops working and its socket closes with 4401',
    tag: 'runners',
    access: 'instanceAdmin',
    status: 204,
    params: z.strictObject({ runnerId }),
    async handler({ principal, params, requestId }, ctx) {
      await audited(ctx.db, { actor: principal!, action: 'runner.revoke', target: { type: 'runner', id: params.runnerId }, requestId }, async (tx) => {
        const [r] = await tx.query(sql`update runners set token_hash = null, revoked_at = now() where id = ${params.runnerId} returning 1`);
        if (!r) throw notFound('no such runner');
      });
      await ctx.hub.disconnect(params.runnerId, CLOSE.unauthorized);
      return new Response(null, { status: 204 });
    },
  }),
  route({
    method: 'POST',
    path: '/runners/pair',
    summary: 'Runner pairing: trade a one-time code for the runner id and token (spec: Runner pairing)',
    tag: 'runners',
    access: 'public',
    body: pairRequest,
    bodyLimit: 16 * 1024,
    async handler({ body, clientAddress, requestId }, ctx) {
      // Guessing codes is limited like guessing passwords (per address).
      await checkSignInAllowed(ctx.db, `pairing:${clientAddress}`, clientAddress);
      const paired = await ctx.db.transaction(async (tx) => {
        const out = await redeemPairingCode(tx, body.code, body);
        if (out) {
          await appendAudit(tx, { actor: { label: `runner:${out.runnerId}` }, action: 'runner.pair', target: { type: 'runner', id: out.runnerId }, diff: { hostname: body.hostname, repaired: out.repaired }, requestId });
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
  route({
    method: 'POST',
    path: '/api/runners/:runnerId/commands',
    summary: 'Send an allowlisted command to a runner and wait for its answer (504 after the command timeout)',
    tag: 'runners',
    access: 'user',
    params: z.strictObject({ runnerId }),
    body: commandBody,
    bodyLimit: 256 * 1024,
    async handler({ principal, params, body }, ctx) {
      const [r] = await ctx.db.query(sql`select 1 from runners where id = ${params.runnerId}`);
      if (!r) throw notFound('no such runner');
      return runCommand(ctx, principal!, params.runnerId, body.name as CommandName, body.args);
    },
  }),
  route({
    method: 'POST',
    path: '/api/projects/:projectId/commands',
    summary: "Send a project command to the project's runner (projectId is filled in)",
    tag: 'runners',
    access: { projectRole: 'viewer', param: 'projectId' },
    params: z.strictObject({ projectId }),
    body: commandBody,
    bodyLimit: 256 * 1024,
    async handler({ principal, params, body }, ctx) {
      const name = body.name as CommandName;
      if (!COMMANDS[name].project) throw badRequest('not_a_project_command', `${name} acts on a runner, not a project: use /api/runners/:runnerId/commands`);
      const [p] = await ctx.db.query<{ runner_id: string | null }>(sql`select runner_id from projects where id = ${params.projectId}`);
      if (!p.runner_id) throw new HttpError(409, 'no_runner', 'this project has no runner yet');
      return runCommand(ctx, principal!, p.runner_id, name, { ...body.args, projectId: params.projectId });
    },
  }),
  route({
    method: 'GET',
    path: '/api/notifications',
    summary: 'Notifications for admins (runner.offline …), newest first',
    tag: 'runners',
    access: 'instanceAdmin',
    query: z.strictObject({ limit: z.coerce.number().int().min(1).max(500).default(100) }),
    async handler({ query }, ctx) {
      const rows = await ctx.db.query<{ id: number; kind: string; runner_id: string | null; data: unknown; created_at: Date }>(sql`
        select * from notifications order by id desc limit ${query.limit}`);
      return json({ notifications: rows.map((n) => ({ id: n.id, kind: n.kind, runnerId: n.runner_id, data: n.data, createdAt: iso(n.created_at) })) });
    },
  }),
];

// The cost area's reports (GET /api/cost, /api/sessions, /api/activity): any signed-in user reads the
// rows of the projects they can see, and a query that names one project first needs the viewer role on
// it (a project the caller has no role on answers 404, as everywhere). One helper holds that rule.
import type * as z from 'zod';
import { requireProjectRole } from '../auth/auth.ts';
import { route } from '../lib/context.ts';
import type { AppContext, Principal, Route, RouteDef, RouteInput } from '../lib/context.ts';

type ReportDef<Q extends z.ZodType<{ projectId?: string }>> = Omit<RouteDef<undefined, Q>, 'method' | 'access' | 'tag' | 'handler' | 'query'> & {
  query: Q;
  handler(input: RouteInput<undefined, z.output<Q>, undefined> & { principal: Principal }, ctx: AppContext): Promise<Response>;
};

export function reportRoute<Q extends z.ZodType<{ projectId?: string }>>(def: ReportDef<Q>): Route {
  const { handler, ...rest } = def;
  return route<undefined, Q>({
    ...rest,
    method: 'GET',
    tag: 'cost',
    access: 'user',
    async handler(input, ctx) {
      const principal = input.principal!;
      const query = input.query as z.output<Q>; // Q is given, so the app parsed it
      if (query.projectId) await requireProjectRole(ctx.db, principal, query.projectId, 'viewer');
      return handler({ ...input, query, principal }, ctx);
    },
  });
}

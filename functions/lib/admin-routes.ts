// Routes instance admins call that share one form: DELETE of a thing an admin configured (a chat channel,
// an instance secret, a webhook), audited with the thing as its target and
// answering 204, or 404 when there is none. One helper writes that form, so a route names only its path,
// its parameter, its audit action and how the thing is removed.
import type * as z from 'zod';
import { audited } from '../audit/audit.ts';
import { route } from './context.ts';
import type { Route } from './context.ts';
import type { Queryable } from './db/index.ts';
import { notFound } from './errors.ts';
import { empty } from './respond.ts';

type Params<K extends string> = z.ZodObject<{ [k in K]: z.ZodType<string> }>;

/**
 * DELETE `path` (instance admins): in one audited transaction (`action` on `{ type: targetType, id: params[id] }`)
 * `remove` deletes the thing and says whether there was one; none = 404 `missing`.
 */
export function auditedDelete<K extends string>(def: {
  path: string;
  summary: string;
  tag: string;
  params: Params<K>;
  id: K;
  action: string;
  targetType: string;
  missing: string;
  remove(tx: Queryable, id: string): Promise<boolean>;
}): Route {
  return route({ method: 'DELETE', path: def.path, tag: def.tag, access: 'instanceAdmin', status: 204, params: def.params,
    summary: def.summary,
    async handler({ principal, params, requestId }, ctx) {
      const id = (params as Record<K, string>)[def.id];
      await audited(ctx.db, { actor: principal!, action: def.action, target: { type: def.targetType, id }, requestId }, async (tx) => {
        if (!(await def.remove(tx, id))) throw notFound(def.missing);
      });
      return empty(204);
    },
  });
}

// The routes under /api/projects/:projectId/* (docs/architecture.md, "Where a new endpoint goes"): one
// helper writes the prefix, the `projectId` path parameter and the project access rule, so a route
// names only the rest of its path, its own parameters and the least role it needs. The app checks the
// role on THAT project before the handler runs (functions/app.ts → requireProjectRole), exactly as for
// a hand-written `access: { projectRole, param: 'projectId' }`.
import * as z from 'zod';
import { route } from './context.ts';
import type { Role, Route, RouteDef } from './context.ts';

/** A path parameter that names a row: letters, digits and dashes, 1–64; the message names what it is. */
export const idParam = (what: string) => z.string().regex(/^[A-Za-z0-9-]{1,64}$/, { message: `must be a ${what} id` });

export const PROJECT_PREFIX = '/api/projects/:projectId';

type ProjectParams<S extends z.ZodRawShape> = z.ZodObject<{ projectId: z.ZodString } & S, z.core.$strict>;

/**
 * A route of the project group. `path` is what follows `/api/projects/:projectId` ('' for the project
 * itself, '/triggers/:triggerId' for one trigger); `params` is the shape of the parameters besides
 * `projectId`; `role` is the least project role that may call it.
 */
export function projectRoute<S extends z.ZodRawShape = {}, Q extends z.ZodType | undefined = undefined, B extends z.ZodType | undefined = undefined>(
  role: Role,
  def: Omit<RouteDef<ProjectParams<S>, Q, B>, 'path' | 'access' | 'params'> & { path: string; params?: S },
): Route {
  const { path, params, ...rest } = def;
  if (path !== '' && !path.startsWith('/')) throw new Error(`a project route's path starts with / (got ${path})`);
  return route({
    ...rest,
    path: `${PROJECT_PREFIX}${path}`,
    access: { projectRole: role, param: 'projectId' },
    params: z.strictObject({ projectId: idParam('project'), ...(params ?? ({} as S)) }) as ProjectParams<S>,
  } as RouteDef<ProjectParams<S>, Q, B>);
}

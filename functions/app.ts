// The HTTP surface as one fetch handler: an itty-router table built from each area's routes, with
// errors mapped to JSON in one place, 404 for unknown paths and 405 (with Allow) for a wrong method.
import { randomUUID } from 'node:crypto';
import { Router } from 'itty-router';
import { routes as costRoutes } from './cost/routes.ts';
import { routes as healthRoutes } from './health/routes.ts';
import { routes as jobRoutes } from './jobs/routes.ts';
import type { AppContext, Route, RouteRequest } from './lib/context.ts';
import { HttpError, errorResponse } from './lib/errors.ts';
import { serveStatic } from './static.ts';

export const allRoutes: Route[] = [...healthRoutes, ...jobRoutes, ...costRoutes];

export function createApp(ctx: AppContext, routes: Route[] = allRoutes) {
  const router = Router<RouteRequest, [AppContext]>({
    catch: (err: unknown) => {
      if (err instanceof HttpError) return errorResponse(err);
      ctx.log.error('unhandled error', { error: err instanceof Error ? (err.stack ?? err.message) : String(err) });
      return errorResponse(new HttpError(500, 'internal_error', 'internal error'));
    },
  });
  for (const r of routes) router[r.method.toLowerCase()](r.path, (req: RouteRequest, c: AppContext) => r.handler(req, c));

  const matchers = router.routes.map(([method, regex]) => ({ method, regex }));
  const allowed = (pathname: string) => [...new Set(matchers.filter((m) => m.regex.test(pathname)).map((m) => m.method))];

  return async function fetch(request: Request): Promise<Response> {
    const req = request as RouteRequest;
    req.requestId = request.headers.get('x-request-id')?.slice(0, 100) || randomUUID();
    let response: Response | undefined = await router.fetch(req, ctx);
    if (!response) {
      const { pathname } = new URL(request.url);
      const methods = allowed(pathname);
      if (methods.length) {
        if (request.method === 'HEAD' && methods.includes('GET')) {
          response = await router.fetch(new Request(request.url, { headers: request.headers }) as RouteRequest, ctx);
          response = new Response(null, { status: response!.status, headers: response!.headers });
        } else {
          response = errorResponse(
            new HttpError(405, 'method_not_allowed', `${request.method} is not allowed on ${pathname}`, undefined, { allow: methods.join(', ') }),
          );
        }
      } else if ((request.method === 'GET' || request.method === 'HEAD') && !pathname.startsWith('/api/')) {
        response = (await serveStatic(ctx.config, pathname, request.method)) ?? undefined;
      }
      response ??= errorResponse(new HttpError(404, 'not_found', `no route for ${request.method} ${pathname}`));
    }
    const headers = new Headers(response.headers);
    headers.set('x-request-id', req.requestId);
    headers.set('x-content-type-options', 'nosniff');
    return new Response(response.body, { status: response.status, statusText: response.statusText, headers });
  };
}

// The HTTP surface as one fetch handler: an itty-router table built from each area's routes. For every
// route the app authenticates, checks access, validates path, query and body with the route's zod
// schemas, and maps errors to JSON in one place; 404 for unknown paths and 405 (with Allow) for a
// wrong method.
import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { Response as AdapterResponse, sendNodeResponse } from '@whatwg-node/server';
import { Router } from 'itty-router';
import { echoed } from '../protocol/text.ts';
import { BUILD_VERSION } from '../protocol/version.ts';
import { routes as actRoutes } from './act/routes.ts';
import { routes as auditRoutes } from './audit/routes.ts';
import { authenticate, requireInstanceAdmin, requireProjectRole, unauthorized } from './auth/auth.ts';
import { routes as authRoutes } from './auth/routes.ts';
import { routes as oidcRoutes } from './auth/oidc/routes.ts';
import { routes as setupRoutes } from './auth/setup.ts';
import { routes as appCheckRoutes } from './codehost/app-check.ts';
import { routes as codehostModeRoutes } from './codehost/mode.ts';
import { routes as codehostRoutes } from './codehost/routes.ts';
import { routes as costRoutes } from './cost/routes.ts';
import { routes as eventListRoutes } from './event-list/routes.ts';
import { routes as sessionRoutes } from './cost/sessions.ts';
import { routes as healthRoutes } from './health/routes.ts';
import { routes as jobRoutes } from './jobs/routes.ts';
import { routes as liveRoutes } from './live/routes.ts';
import { observeRequest } from './metrics/registry.ts';
import { routes as metricsRoutes } from './metrics/routes.ts';
import type { AppContext, Route, RouteInput } from './lib/context.ts';
import { HttpError, errorResponse, fromDatabaseError } from './lib/errors.ts';
import { databaseUnavailable, isDatabaseUnavailable } from './lib/db/unavailable.ts';
import { empty, withHeaders } from './lib/respond.ts';
import { NO_BODY_BYTES, afterReads, hasBody, nodeHasBody, nodeHeaders, parseWith, readBody, readJson, readNodeBody, refuseDeclaredLength } from './lib/http.ts';
import { routes as notificationRoutes } from './notifications/routes.ts';
import { openapiRoutes } from './openapi.ts';
import { routes as poolRoutes } from './projects/pool-routes.ts';
import { routes as projectRoutes } from './projects/routes.ts';
import { routes as installRoutes } from './runners/install.ts';
import { routes as runnerRoutes } from './runners/routes.ts';
import { routes as runRoutes } from './runs/routes.ts';
import { routes as projectScheduleRoutes } from './schedules/routes.ts';
import { routes as settingsRoutes } from './settings/routes.ts';
import { serveStatic } from './static.ts';
import { emptyHeaders, hook, hookPublicId, isEmpty } from './triggers/hook.ts';
import type { Empty } from './triggers/hook.ts';
import { routes as triggerRoutes } from './triggers/routes.ts';
import { routes as webhookRoutes } from './webhooks/routes.ts';

export const allRoutes: Route[] = [
  ...healthRoutes,
  ...authRoutes,
  ...setupRoutes,
  ...oidcRoutes,
  ...projectRoutes,
  ...poolRoutes,
  ...runnerRoutes,
  ...installRoutes,
  ...actRoutes,
  ...runRoutes,
  ...settingsRoutes,
  ...auditRoutes,
  ...jobRoutes,
  ...costRoutes,
  ...sessionRoutes,
  ...webhookRoutes,
  ...eventListRoutes,
  ...notificationRoutes,
  ...triggerRoutes,
  ...codehostRoutes,
  ...appCheckRoutes,
  ...codehostModeRoutes,
  ...projectScheduleRoutes,
  ...liveRoutes,
  ...metricsRoutes,
  ...openapiRoutes(() => allRoutes),
];

interface RoutedRequest extends Request {
  params: Record<string, string>;
  query: Record<string, string | string[] | undefined>;
}

export interface RequestMeta {
  requestId: string;
  clientAddress: string;
  /** The TCP peer's address, whatever X-Forwarded-For says (GET /metrics's METRICS_ALLOW). */
  peerAddress: string;
}

async function dispatch(r: Route, req: RoutedRequest, ctx: AppContext, meta: RequestMeta): Promise<Response> {
  // Body size first, before any database work: an oversized body is refused unread (413, connection
  // closed); a route that takes no body reads and ignores at most NO_BODY_BYTES.
  const bodyLimit = r.bodyLimit ?? ctx.config.MAX_BODY_BYTES;
  if (!r.rawBody) {
    refuseDeclaredLength(req.headers.get('content-length'), r.body ? bodyLimit : NO_BODY_BYTES);
    if (!r.body && hasBody(req)) await readBody(req, NO_BODY_BYTES);
  }
  const principal = r.access === 'public' ? null : await authenticate(ctx, req);
  if (r.access !== 'public' && !principal) throw unauthorized();
  const params = r.params ? parseWith(r.params, req.params, 'invalid_path') : undefined;
  if (principal && r.access === 'instanceAdmin') requireInstanceAdmin(principal);
  if (principal && typeof r.access === 'object') {
    await requireProjectRole(ctx.db, principal, (params as Record<string, string>)[r.access.param], r.access.projectRole);
  }
  const query = r.query ? parseWith(r.query, { ...req.query }, 'invalid_query') : undefined;
  const body = r.body ? await readJson(req, r.body, bodyLimit) : undefined;
  const input: RouteInput<unknown, unknown, unknown> = { params, query, body, request: req, principal, ...meta };
  const response = await r.handler(input, ctx);
  return ctx.config.CHECK_ANSWERS ? checkAnswer(r, response, ctx) : response;
}

/** dispatch, its errors answered, and the answer counted under the route's template (functions/metrics/). */
async function measured(r: Route, req: RoutedRequest, ctx: AppContext, meta: RequestMeta): Promise<Response> {
  const started = performance.now();
  let response: Response;
  try {
    response = await dispatch(r, req, ctx, meta);
  } catch (err) {
    response = answerError(ctx, err);
  }
  observeRequest(r.method, r.path, response.status, (performance.now() - started) / 1000);
  return response;
}

/**
 * CHECK_ANSWERS (the test suite turns it on): a JSON answer whose status the route declares with a schema
 * (`responses`, the protocol/api/ shapes the pages read) must match it, or the caller gets 500
 * `answer_mismatch` naming the route and the first difference — so a declared shape cannot drift from
 * what the handler sends.
 */
export async function checkAnswer(r: Route, response: Response, ctx: AppContext): Promise<Response> {
  const schema = r.responses?.[response.status]?.schema;
  if (!schema || !(response.headers.get('content-type') ?? '').includes('application/json')) return response;
  const checked = schema.safeParse(await response.clone().json());
  if (checked.success) return response;
  const first = checked.error.issues[0];
  const where = `${r.method} ${r.path} ${response.status}: ${first?.path.join('.') || '(answer)'} ${first?.message ?? ''}`;
  ctx.log.error('an answer does not match its declared schema', { route: where });
  return errorResponse(new HttpError(500, 'answer_mismatch', `the answer of ${where}`));
}

/** One warning per 10 s while the database is away, not one per request. */
let lastUnavailableWarning = 0;
function warnUnavailable(ctx: AppContext, err: unknown): void {
  if (Date.now() - lastUnavailableWarning < 10_000) return;
  lastUnavailableWarning = Date.now();
  ctx.log.warn('the database cannot be reached; answering 503 database_unavailable', { code: String((err as { code?: unknown }).code) });
}

/** The answer to what a handler threw: its own HttpError, 409 for a taken name, 503 while the database is away, else 500. */
function answerError(ctx: AppContext, err: unknown): Response {
  if (err instanceof HttpError) return errorResponse(err);
  const conflict = fromDatabaseError(err);
  if (conflict) return errorResponse(conflict);
  if (isDatabaseUnavailable(err)) {
    warnUnavailable(ctx, err);
    return errorResponse(databaseUnavailable());
  }
  ctx.log.error('unhandled error', { error: err instanceof Error ? (err.stack ?? err.message) : String(err) });
  return errorResponse(new HttpError(500, 'internal_error', 'internal error'));
}

/** The request's own X-Request-Id (at most 100 characters), else a new one. */
const requestIdOf = (given: string | null | undefined): string => given?.slice(0, 100) || randomUUID();

/**
 * Headers on every answer, written into its own header record (lib/respond.ts) so the adapter still
 * writes them all at once. X-Svc-Version: which build answered, `<version>+<commit>` (during a rolling
 * upgrade, replicas of two builds answer side by side, perhaps with one package version).
 */
const answerHeaders = (requestId: string): Record<string, string> => ({ 'x-request-id': requestId, 'x-content-type-options': 'nosniff', 'x-svc-version': BUILD_VERSION });
const finish = (response: Response, requestId: string): Response => withHeaders(response, answerHeaders(requestId));

/**
 * The server's front door for POST /hooks/<publicId> (functions/server.ts): the trigger endpoint served
 * from Node's request as it is — the route's own handler (triggers/hook.ts), with the same answers,
 * headers and error mapping as every other route, but without building a web Request, matching it
 * against the route table and parsing its path with zod. That is most of what a refused delivery
 * costs, and the spec asks refusals to stay cheap (docs/performance.md, "Inbound triggers").
 * False (nothing done) for any other request, and for a target the route's pattern would not read the
 * same way (dot segments): the adapter and the router serve those.
 */
export function createHookDoor(ctx: AppContext): (req: IncomingMessage, res: ServerResponse) => boolean {
  return (req, res) => {
    if (req.method !== 'POST') return false;
    const publicId = hookPublicId(req.url ?? '');
    if (publicId === null) return false;
    const headers = nodeHeaders(req);
    const started = performance.now();
    const requestId = requestIdOf(headers.get('x-request-id'));
    // As the adapter sends every other answer: our answers have a string or no body, written at once.
    const failed = (err: unknown) => {
      ctx.log.error('an inbound trigger answer could not be sent', { error: err instanceof Error ? err.message : String(err) });
      res.destroy();
    };
    const write = (answer: () => Response | Empty) => {
      try {
        const a = answer();
        observeRequest('POST', '/hooks/:publicId', a.status, (performance.now() - started) / 1000);
        // A bodiless 401/404 (most refusals) is written as it is, with the same headers a Response would get.
        if (isEmpty(a)) return void res.writeHead(a.status, Object.assign(answerHeaders(requestId), emptyHeaders(a))).end();
        const sending = sendNodeResponse(finish(a, requestId), res, req, true);
        if (sending) sending.catch(failed); // only a streamed body is sent asynchronously
      } catch (err) {
        failed(err);
      }
    };
    // The answers that became ready in one event-loop turn are written one after another at its end: a
    // client on the same host (a reverse proxy, the benchmark's load) then wakes once for the lot rather
    // than once per answer, which cost the server more than the rest of a refusal (docs/performance.md,
    // Inbound triggers). A turn's answers wait at most for the rest of that turn's requests.
    const send = (answer: () => Response | Empty) => afterReads(() => write(answer));
    hook(publicId, { headers, hasBody: nodeHasBody(req), read: (limit, ms) => readNodeBody(req, limit, ms) }, ctx).then(
      (answer) => send(() => answer),
      (err: unknown) => send(() => answerError(ctx, err)),
    );
    return true;
  };
}

export function createApp(ctx: AppContext, routes: Route[] = allRoutes) {
  const router = Router<RoutedRequest, [AppContext, RequestMeta]>({
    catch: (err: unknown) => answerError(ctx, err),
  });
  for (const r of routes) {
    router[r.method.toLowerCase()](r.path, (req: RoutedRequest, c: AppContext, meta: RequestMeta) => measured(r, req, c, meta));
  }
  const matchers = router.routes.map(([method, regex]) => ({ method, regex }));
  const allowed = (pathname: string) => [...new Set(matchers.filter((m) => m.regex.test(pathname)).map((m) => m.method))];

  return async function fetch(request: Request, clientAddress = '', peerAddress = clientAddress): Promise<Response> {
    const meta: RequestMeta = { requestId: requestIdOf(request.headers.get('x-request-id')), clientAddress, peerAddress };
    let response: Response | undefined = await router.fetch(request as RoutedRequest, ctx, meta);
    if (!response) {
      const started = performance.now();
      // Counted under `static` (a page's file) or `none`; a HEAD answered by its GET route was counted there.
      let counted: 'static' | 'none' | null = 'none';
      const { pathname } = new URL(request.url);
      const methods = allowed(pathname);
      if (methods.length) {
        if (request.method === 'HEAD' && methods.includes('GET')) {
          response = await router.fetch(new Request(request.url, { headers: request.headers }) as RoutedRequest, ctx, meta);
          counted = null;
          response = new AdapterResponse(null, { status: response!.status, headers: response!.headers }) as unknown as Response;
        } else {
          response = errorResponse(
            new HttpError(405, 'method_not_allowed', `${request.method} is not allowed on ${echoed(pathname, 200)}`, undefined, { allow: methods.join(', ') }),
          );
        }
      } else if ((request.method === 'GET' || request.method === 'HEAD') && !pathname.startsWith('/api/')) {
        response = (await serveStatic(ctx.config, pathname, request.method)) ?? undefined;
        if (response) counted = 'static';
      }
      // Under /hooks/ a 404 has an empty body, like an unknown trigger (spec: Inbound trigger responses).
      if (!response && pathname.startsWith('/hooks/')) response = empty(404);
      response ??= errorResponse(new HttpError(404, 'not_found', `no route for ${request.method} ${echoed(pathname, 200)}`));
      // No route read the body: close rather than let Node read and discard all of it.
      if (hasBody(request)) withHeaders(response, { connection: 'close' });
      if (counted) observeRequest(request.method, counted, response.status, (performance.now() - started) / 1000);
    }
    return finish(response, meta.requestId);
  };
}

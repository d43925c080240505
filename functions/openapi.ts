// GET /api/openapi.json — OpenAPI 3.1, generated from the same route table and zod schemas that
// validate requests (DESIGN §4), so the document cannot drift from what the server enforces.
import * as z from 'zod';
import { VERSION } from '../protocol/version.ts';
import { route } from './lib/context.ts';
import { json } from './lib/errors.ts';
import type { Route } from './lib/context.ts';

const errorSchema = {
  type: 'object',
  required: ['error'],
  properties: {
    error: {
      type: 'object',
      required: ['code', 'message'],
      properties: { code: { type: 'string' }, message: { type: 'string' }, fields: { type: 'object', additionalProperties: { type: 'string' } } },
    },
  },
};

const jsonSchema = (schema: z.ZodType, io: 'input' | 'output') => {
  const { $schema: _drop, ...rest } = z.toJSONSchema(schema, { io, unrepresentable: 'any' }) as Record<string, unknown>;
  return rest;
};

export const openapiPath = (path: string) => path.replace(/:(\w+)/g, '{$1}');

function parameters(r: Route) {
  const out: unknown[] = [];
  for (const [where, schema] of [
    ['path', r.params],
    ['query', r.query],
  ] as const) {
    if (!schema) continue;
    const js = jsonSchema(schema, 'input') as { properties?: Record<string, unknown>; required?: string[] };
    for (const [name, s] of Object.entries(js.properties ?? {})) {
      out.push({ name, in: where, required: where === 'path' || (js.required ?? []).includes(name), schema: s });
    }
  }
  return out;
}

export function buildOpenApi(routes: Route[]) {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const r of routes) {
    const p = (paths[openapiPath(r.path)] ??= {});
    const responses: Record<string, unknown> = {};
    for (const [status, res] of Object.entries(r.responses ?? { [r.status ?? 200]: { description: r.status === 204 ? 'done, no body' : 'success' } })) {
      responses[status] = { description: res.description, ...(res.schema ? { content: { 'application/json': { schema: jsonSchema(res.schema, 'output') } } } : {}) };
    }
    responses.default = { description: 'error', content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } } };
    p[r.method.toLowerCase()] = {
      summary: r.summary,
      tags: [r.tag],
      operationId: `${r.method.toLowerCase()}${openapiPath(r.path).replace(/[^A-Za-z0-9]+(.)?/g, (_m, c: string | undefined) => (c ? c.toUpperCase() : ''))}`,
      security: r.access === 'public' ? [] : [{ session: [] }, { bearer: [] }],
      'x-svc-access': typeof r.access === 'object' ? `project:${r.access.projectRole}` : r.access,
      parameters: parameters(r),
      ...(r.body ? { requestBody: { required: true, content: { 'application/json': { schema: jsonSchema(r.body, 'input') } } } } : {}),
      responses,
    };
  }
  return {
    openapi: '3.1.0',
    info: { title: 'svc API', version: VERSION, description: 'Admin API of svc. Browser sessions send X-CSRF-Token on state-changing requests.' },
    paths,
    components: {
      schemas: { Error: errorSchema },
      securitySchemes: {
        session: { type: 'apiKey', in: 'cookie', name: 'svc_session' },
        bearer: { type: 'http', scheme: 'bearer', description: 'Personal API token svc_pat_…' },
      },
    },
  };
}

/**
 * GET /api/openapi.json over the route table that `routes()` returns when first asked (app.ts passes its
 * own, of which this route is part: a function, so neither module imports the other at run time).
 */
export function openapiRoutes(routes: () => Route[]): Route[] {
  let cached: unknown;
  return [
    route({ method: 'GET', path: '/api/openapi.json', tag: 'meta', access: 'public',
      summary: 'This OpenAPI 3.1 document',
      async handler() {
        cached ??= buildOpenApi(routes());
        return json(cached);
      },
    }),
  ];
}

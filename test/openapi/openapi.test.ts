// GET /api/openapi.json against the real server, checked route by route against the route table the
// server is built from (allRoutes): every route documented with its method, path parameters, body and
// security, and nothing documented that is not a route.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { allRoutes } from '../../functions/app.ts';
import type { Route } from '../../functions/lib/context.ts';
import { startServer } from '../helpers/server.ts';
import type { RunningServer } from '../helpers/server.ts';

/* eslint-disable @typescript-eslint/no-explicit-any */
let server: RunningServer;
let doc: any;
const METHODS = ['get', 'put', 'post', 'delete', 'patch', 'head', 'options', 'trace'];
const docPath = (path: string) => path.replace(/:(\w+)/g, '{$1}');
const pathParams = (path: string) => [...path.matchAll(/:(\w+)/g)].map((m) => m[1]);
const label = (r: Route) => `${r.method} ${r.path}`;
const op = (r: Route) => doc.paths?.[docPath(r.path)]?.[r.method.toLowerCase()];

test.before(async () => {
  server = await startServer({ admin: true });
});
test.after(async () => server?.cleanup());

test('GET /api/openapi.json is public JSON, OpenAPI 3.1.0', async () => {
  const res = await fetch(`${server.url}/api/openapi.json`);
  assert.is(res.status, 200);
  assert.match(res.headers.get('content-type') ?? '', /^application\/json/);
  doc = await res.json();
  assert.is(doc.openapi, '3.1.0');
  assert.type(doc.info?.title, 'string');
  assert.type(doc.info?.version, 'string');
  assert.type(doc.paths, 'object');
  // Public even with a bad bearer token: the document does not depend on who asks.
  const withBadToken = await fetch(`${server.url}/api/openapi.json`, { headers: { authorization: 'Bearer svc_pat_wrong' } });
  assert.is(withBadToken.status, 200);
  assert.equal(await withBadToken.json(), doc);
  const asAdmin = await server.api('/api/openapi.json');
  assert.equal(await asAdmin.json(), doc);
});

test('the route table is not trivially small (the import worked)', () => {
  assert.ok(allRoutes.length >= 20, `${allRoutes.length} routes`);
  assert.ok(allRoutes.some((r) => r.path === '/api/openapi.json'));
});

test('every route of allRoutes is documented under its {param} path and method', () => {
  const missing = allRoutes.filter((r) => !op(r)).map(label);
  assert.equal(missing, [], `undocumented routes: ${missing.join(', ')}`);
  for (const r of allRoutes) {
    assert.not.match(docPath(r.path), /:/, `${label(r)}: no :param left in the documented path`);
    assert.type(op(r).summary, 'string', `${label(r)} has a summary`);
    assert.ok(op(r).responses && Object.keys(op(r).responses).length, `${label(r)} has responses`);
  }
});

test('nothing is documented that is not a route (no extra paths, no extra methods)', () => {
  const routeKeys = new Set(allRoutes.map((r) => `${r.method.toLowerCase()} ${docPath(r.path)}`));
  const extra: string[] = [];
  for (const [path, item] of Object.entries<any>(doc.paths)) {
    const methods = Object.keys(item).filter((k) => METHODS.includes(k));
    if (!methods.length) extra.push(`(no operation) ${path}`);
    for (const m of methods) if (!routeKeys.has(`${m} ${path}`)) extra.push(`${m} ${path}`);
  }
  assert.equal(extra, [], `documented but not routes: ${extra.join(', ')}`);
  assert.is(
    Object.values<any>(doc.paths).reduce((n, item) => n + Object.keys(item).filter((k) => METHODS.includes(k)).length, 0),
    allRoutes.length,
    'one operation per route',
  );
});

test('every path parameter is declared as a required `in: path` parameter, and only those', () => {
  for (const r of allRoutes) {
    const o = op(r);
    const declared = (o.parameters ?? []).filter((p: any) => p.in === 'path');
    const names = pathParams(r.path);
    assert.equal(declared.map((p: any) => p.name).sort(), [...names].sort(), `${label(r)} path parameters`);
    for (const p of declared) {
      assert.is(p.required, true, `${label(r)}: path parameter ${p.name} is required`);
      assert.type(p.schema, 'object', `${label(r)}: ${p.name} has a schema`);
    }
    // Parameters may also sit on the path item; none should duplicate or contradict.
    const onItem = doc.paths[docPath(r.path)].parameters ?? [];
    assert.equal(onItem.filter((p: any) => p.in === 'path' && !names.includes(p.name)), [], `${label(r)}: no stray path-item parameters`);
  }
});

test('routes with a query schema declare its fields as `in: query` parameters', () => {
  const withQuery = allRoutes.filter((r) => r.query);
  assert.ok(withQuery.length >= 1);
  for (const r of withQuery) {
    const declared = op(r).parameters.filter((p: any) => p.in === 'query').map((p: any) => p.name).sort();
    assert.equal(declared, Object.keys((r.query as any).shape).sort(), `${label(r)} query parameters`);
  }
  for (const r of allRoutes.filter((x) => !x.query)) {
    assert.equal(op(r).parameters.filter((p: any) => p.in === 'query'), [], `${label(r)} declares no query parameters`);
  }
});

test('routes with a body have a required JSON requestBody whose schema has exactly the body’s properties', () => {
  const withBody = allRoutes.filter((r) => r.body);
  assert.ok(withBody.length >= 8);
  for (const r of withBody) {
    const rb = op(r).requestBody;
    assert.ok(rb, `${label(r)} has a requestBody`);
    assert.is(rb.required, true, `${label(r)}: the body is required`);
    const schema = rb.content?.['application/json']?.schema;
    assert.ok(schema, `${label(r)} has an application/json schema`);
    assert.is(schema.type, 'object', `${label(r)}: the body is an object`);
    const expected = Object.keys((r.body as any).shape).sort();
    assert.equal(Object.keys(schema.properties ?? {}).sort(), expected, `${label(r)} body properties`);
    // Unknown fields are refused by name, so the document must not invite them.
    assert.is(schema.additionalProperties, false, `${label(r)}: additionalProperties false`);
    for (const req of schema.required ?? []) assert.ok(expected.includes(req), `${label(r)}: required ${req} is a property`);
  }
  for (const r of allRoutes.filter((x) => !x.body)) {
    assert.is(op(r).requestBody, undefined, `${label(r)} has no requestBody`);
  }
  // Spot checks: defaults make a field optional in the request.
  const create = op(allRoutes.find((r) => r.method === 'POST' && r.path === '/api/projects')!).requestBody.content['application/json'].schema;
  assert.equal([...create.required].sort(), ['name', 'repo']);
  assert.equal(create.properties.budgetAction.enum, ['warn', 'stop']);
});

test('non-public routes declare security with defined schemes; public routes declare none', () => {
  const schemes = doc.components?.securitySchemes ?? {};
  assert.ok(Object.keys(schemes).length >= 1, 'security schemes are defined');
  for (const r of allRoutes) {
    const o = op(r);
    if (r.access === 'public') {
      assert.equal(o.security ?? [], [], `${label(r)}: public, no security requirement`);
    } else {
      assert.ok(Array.isArray(o.security) && o.security.length > 0, `${label(r)} declares security`);
      for (const req of o.security) {
        assert.ok(Object.keys(req).length > 0, `${label(r)}: no empty (anonymous) alternative`);
        for (const name of Object.keys(req)) assert.ok(schemes[name], `${label(r)}: scheme ${name} is defined`);
      }
      const access = typeof r.access === 'object' ? `project:${r.access.projectRole}` : r.access;
      assert.is(o['x-svc-access'], access, `${label(r)} documents who may call it`);
    }
  }
  assert.is(doc.security, undefined, 'no global security requirement that would override public routes');
});

test('operation ids are unique and every $ref resolves', () => {
  const ids = allRoutes.map((r) => op(r).operationId);
  for (const id of ids) assert.type(id, 'string');
  assert.is(new Set(ids).size, ids.length, 'unique operationIds');
  const refs = JSON.stringify(doc).match(/"\$ref":"[^"]+"/g) ?? [];
  for (const ref of refs) {
    const target = JSON.parse(`{${ref}}`).$ref as string;
    assert.match(target, /^#\//);
    const resolved = target
      .slice(2)
      .split('/')
      .reduce((node: any, key) => node?.[key.replace(/~1/g, '/').replace(/~0/g, '~')], doc);
    assert.ok(resolved, `${target} resolves`);
  }
});

test('the documented path parameters are the ones the server validates (a bad one is a 400 naming it)', async () => {
  const res = await server.api('/api/projects/bad%20id!');
  assert.is(res.status, 400);
  const { error } = await res.json();
  assert.ok(error.fields.projectId);
  const p = op(allRoutes.find((r) => r.method === 'GET' && r.path === '/api/projects/:projectId')!).parameters[0];
  assert.is(p.name, 'projectId');
  assert.ok(!new RegExp(p.schema.pattern).test('bad id!'), 'the documented pattern refuses it too');
});

test('the documented success status is the one the server answers (201 on create, 204 on delete)', async () => {
  const documented = (method: string, path: string) => Object.keys(doc.paths[docPath(path)][method.toLowerCase()].responses).filter((s) => /^\d{3}$/.test(s));
  const created = await server.api('/api/projects', { method: 'POST', json: { name: 'OpenAPI', repo: 'acme/openapi' } });
  const token = await server.api('/api/tokens', { method: 'POST', json: { name: 'openapi' } });
  const tokenId = (await token.json()).id;
  const deleted = await server.api(`/api/tokens/${tokenId}`, { method: 'DELETE' });
  const checks: [string, string, number][] = [
    ['POST', '/api/projects', created.status],
    ['POST', '/api/tokens', token.status],
    ['DELETE', '/api/tokens/:tokenId', deleted.status],
  ];
  assert.equal(checks.map((c) => c[2]), [201, 201, 204], 'the server answers');
  const wrong = checks.filter(([m, p, status]) => !documented(m, p).includes(String(status))).map(([m, p, s]) => `${m} ${p} answers ${s} but documents ${documented(m, p).join(', ')}`);
  assert.equal(wrong, [], wrong.join('; '));
});

test.run();

// CHECK_ANSWERS (functions/app.ts checkAnswer): an answer whose status the route declares with a schema
// is held to it — a mismatch becomes 500 answer_mismatch naming the route and the field, a match passes
// unchanged, and undeclared statuses and non-JSON answers are not read.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import * as z from 'zod';
import { checkAnswer } from '../../functions/app.ts';
import type { AppContext, Route } from '../../functions/lib/context.ts';
import { json } from '../../functions/lib/errors.ts';
import { projectRoute } from '../../functions/lib/project-routes.ts';

const logged: string[] = [];
const ctx = { log: { error: (msg: string, f: Record<string, unknown>) => logged.push(`${msg} ${JSON.stringify(f)}`) } } as unknown as AppContext;
const r = projectRoute('viewer', {
  method: 'GET',
  path: '/things/:thingId',
  summary: 'a thing',
  tag: 't',
  params: { thingId: z.string() },
  responses: { 200: { description: 'the thing', schema: z.object({ id: z.string(), count: z.number().int() }) } },
  handler: () => json({}),
}) as Route;

test('the project group writes the prefix, the projectId parameter and the project access rule', () => {
  assert.is(r.path, '/api/projects/:projectId/things/:thingId');
  assert.equal(r.access, { projectRole: 'viewer', param: 'projectId' });
  assert.equal(r.params!.parse({ projectId: 'p-1', thingId: 'x' }), { projectId: 'p-1', thingId: 'x' });
  assert.throws(() => r.params!.parse({ projectId: 'p/1', thingId: 'x' }));
  assert.throws(() => r.params!.parse({ projectId: 'p-1', thingId: 'x', other: 'y' }));
});

test('a declared answer that matches passes unchanged', async () => {
  const answer = json({ id: 'a', count: 2, extra: true });
  assert.is(await checkAnswer(r, answer, ctx), answer);
});

test('a declared answer that does not match is 500 answer_mismatch naming the route and the field, and logged', async () => {
  const out = await checkAnswer(r, json({ id: 'a', count: 'two' }), ctx);
  assert.is(out.status, 500);
  const body = (await out.json()) as { error: { code: string; message: string } };
  assert.is(body.error.code, 'answer_mismatch');
  assert.match(body.error.message, 'GET /api/projects/:projectId/things/:thingId 200: count');
  assert.match(logged.join('\n'), 'does not match its declared schema');
});

test('an undeclared status and a non-JSON answer are not read', async () => {
  const created = json({ nothing: 1 }, { status: 201 });
  assert.is(await checkAnswer(r, created, ctx), created);
  const text = new Response('plain', { status: 200, headers: { 'content-type': 'text/plain' } });
  assert.is(await checkAnswer(r, text, ctx), text);
});

test.run();

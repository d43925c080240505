// The fake GitHub's checker (test/fakes/openapi-check.ts) against GitHub's OpenAPI description: the
// fake's own shapes match; a missing field, a wrong type deep inside, a value outside an enum, an
// unknown query parameter, a wrong request body and an operation GitHub does not have are each reported
// with the JSON path; null is accepted where GitHub's 3.0 description says `nullable`, refused elsewhere;
// a status the operation does not describe is not checked.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { checkExchange, findOperation } from '../fakes/openapi-check.ts';
import { pullJson, userJson } from '../fakes/github-shapes.ts';

const pull = () => pullJson('acme/app', 7, { number: 3, title: 't', body: '', state: 'open', merged: false, mergedAt: null, head: 'feature', sha: 'a'.repeat(40), base: 'main' });
const at = (ms: { part: string; at: string; message: string }[]) => ms.map((m) => `${m.part} ${m.at}: ${m.message}`);

test('operations are found by template, a literal segment before a parameter', () => {
  assert.is(findOperation('GET', '/repos/acme/app/pulls/3')?.template, '/repos/{owner}/{repo}/pulls/{pull_number}');
  assert.is(findOperation('GET', '/repos/acme/app/installation')?.template, '/repos/{owner}/{repo}/installation');
  assert.is(findOperation('POST', '/app/installations/9/access_tokens')?.operationId, 'apps/create-installation-access-token');
  assert.is(findOperation('DELETE', '/repos/acme/app/pulls/3'), null);
});

test("the fake's pull request matches; null where nullable (merged_at) passes", () => {
  assert.equal(checkExchange({ method: 'GET', path: '/repos/acme/app/pulls/3', status: 200, responseBody: pull() }), []);
  assert.is(pull().merged_at, null);
});

test('a missing field, a wrong type deep inside, null where not nullable and a value outside an enum are reported with their JSON path', () => {
  const p = pull();
  delete p.merged;
  p.head.sha = 42;
  p.user.login = null;
  p.state = 'merged';
  const found = at(checkExchange({ method: 'GET', path: '/repos/acme/app/pulls/3', status: 200, responseBody: p }));
  assert.ok(found.includes("response $: must have required property 'merged'"), found.join('\n'));
  assert.ok(found.includes('response $.head.sha: must be string'), found.join('\n'));
  assert.ok(found.includes('response $.user.login: must be string'), found.join('\n'));
  assert.ok(found.some((f) => f.startsWith('response $.state: must be equal to one of the allowed values')), found.join('\n'));
  const list = at(checkExchange({ method: 'GET', path: '/app/installations', status: 200, responseBody: [{ id: 1, account: { ...userJson('acme'), id: 'x' } }] }));
  assert.ok(list.includes('response $[0].account.id: must be integer'), list.join('\n'));
});

test('query parameters: unknown ones and values outside the schema are reported; known ones in range pass', () => {
  const ok = checkExchange({ method: 'GET', path: '/repos/acme/app/pulls', query: new URLSearchParams('state=open&per_page=100&page=2&head=acme:b'), status: 200, responseBody: [] });
  assert.equal(ok, []);
  const bad = at(checkExchange({ method: 'GET', path: '/repos/acme/app/pulls', query: new URLSearchParams('state=merged&per_page=x&since=1'), status: 200, responseBody: [] }));
  assert.ok(bad.some((f) => f.startsWith('query state: must be equal to one of the allowed values')), bad.join('\n'));
  assert.ok(bad.includes('query per_page: must be integer'), bad.join('\n'));
  assert.ok(bad.includes('query since: /repos/{owner}/{repo}/pulls takes no query parameter since'), bad.join('\n'));
});

test('request bodies: a wrong type and a missing required body are reported', () => {
  const tokenBody = at(checkExchange({ method: 'POST', path: '/app/installations/9/access_tokens', requestBody: { repositories: 'app' }, status: 404, responseBody: { message: 'Not Found', documentation_url: 'https://docs.github.com/rest' } }));
  assert.equal(tokenBody, ['request $.repositories: must be array']);
  const issue = at(checkExchange({ method: 'POST', path: '/repos/acme/app/issues', status: 422, responseBody: { message: 'Validation Failed' } }));
  assert.ok(issue.includes('request $: /repos/{owner}/{repo}/issues requires a JSON body'), issue.join('\n'));
  const title = at(checkExchange({ method: 'POST', path: '/repos/acme/app/issues', requestBody: { body: 'no title' }, status: 422, responseBody: { message: 'Validation Failed' } }));
  assert.ok(title.includes("request $: must have required property 'title'"), title.join('\n'));
});

test("an operation GitHub does not have is reported; a status it does not describe is not checked", () => {
  assert.equal(at(checkExchange({ method: 'GET', path: '/repos/acme/app/no-such-thing', status: 404, responseBody: { message: 'Not Found' } })), ["operation $: GitHub's REST API has no operation GET /repos/acme/app/no-such-thing"]);
  assert.equal(checkExchange({ method: 'GET', path: '/repos/acme/app/pulls/3', status: 401, responseBody: { anything: true } }), []);
});

test.run();

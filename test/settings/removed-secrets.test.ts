// The instance secrets nothing read (`chat.bot_token`, `codehost.app_private_key`,
// `codehost.webhook_secret`; issue #36 item 4) are gone: the secrets API answers 404 for each, as for
// any path that does not exist, and the settings API refuses their names as unknown keys (400 naming
// the key), storing nothing. The secrets that are used stay where they belong (GitHub Apps, chat
// channels, webhooks, triggers).
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { startServer } from '../helpers/server.ts';
import type { RunningServer } from '../helpers/server.ts';
import { callAs } from '../helpers/users.ts';

let server: RunningServer;
const call = (path: string, init: { method?: string; json?: unknown } = {}) => callAs(server, path, init);
const REMOVED = ['chat.bot_token', 'codehost.app_private_key', 'codehost.webhook_secret'];

test.before(async () => {
  server = await startServer({ admin: true, env: { APP_ENCRYPTION_KEY: Buffer.alloc(32, 5).toString('base64') } });
});
test.after(async () => {
  await server?.cleanup();
});

test('the secrets API is gone: GET, PUT and DELETE of each removed name answer 404', async () => {
  assert.is((await call('/api/secrets')).status, 404);
  for (const name of REMOVED) {
    assert.is((await call(`/api/secrets/${name}`, { method: 'PUT', json: { value: 'xoxb-anything' } })).status, 404, name);
    assert.is((await call(`/api/secrets/${name}`, { method: 'DELETE' })).status, 404, name);
    assert.is((await call(`/api/secrets/${name}`)).status, 404, name);
  }
  const spec = (await call('/api/openapi.json')).body;
  assert.not.ok(Object.keys(spec.paths).some((p) => p.startsWith('/api/secrets')), 'the OpenAPI document lists no secrets endpoint');
});

test('the settings API refuses the removed names as unknown keys: 400 naming the key, nothing stored', async () => {
  const before = (await call('/api/settings')).body;
  for (const name of REMOVED) {
    const res = await call('/api/settings', { method: 'PATCH', json: { [name]: 'value' } });
    assert.is(res.status, 400, name);
    assert.ok(Object.keys(res.body.error.fields ?? {}).length > 0 && JSON.stringify(res.body.error).includes(name), JSON.stringify(res.body));
  }
  const after = (await call('/api/settings')).body;
  assert.equal(after, before);
  assert.not.match(JSON.stringify(after), 'bot_token');
});

test.run();

// The real server's safety net (lib/safety-net.ts): an error thrown asynchronously from inside a
// delivery attempt is logged at ERROR and the server stays up and keeps delivering. The seam is a
// preload (NODE_OPTIONS=--import) that wraps http.request so that a request to a `/throw` path
// throws from a later turn of the event loop — an error nobody can catch, as the pinned lookup's was.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { createTestDelivery } from '../../functions/webhooks/webhooks.ts';
import { tempDir } from '../helpers/db.ts';
import { startServer } from '../helpers/server.ts';
import { KEY, addWebhook, deliveries, receiver, serverDatabase, setAllowlist } from './_harness.ts';

const PRELOAD = `
import http from 'node:http';
const request = http.request;
http.request = function (...args) {
  const req = request.apply(this, args);
  if (String(args[0]?.path ?? '').startsWith('/throw')) {
    setImmediate(() => { throw new Error('injected: thrown inside a delivery attempt for https://u:pa55@x.test/?token=t0ken'); });
  }
  return req;
};
`;

test('an error thrown from inside delivery attempts is logged at ERROR, the server stays up and delivers the rest', async () => {
  const data = (await serverDatabase())!;
  const rx = await receiver();
  const preload = join(tempDir('preload-'), 'throw.mjs');
  writeFileSync(preload, PRELOAD);
  let db = await data.open();
  await setAllowlist(db, ['127.0.0.1/32']);
  const throwing = await addWebhook(db, { url: `${rx.url}/throw`, events: ['pr.opened'] });
  const fine = await addWebhook(db, { url: `${rx.url}/fine`, events: ['pr.opened'] });
  for (let i = 0; i < 3; i++) await createTestDelivery(db, throwing.id, new Date());
  await createTestDelivery(db, fine.id, new Date(Date.now() + 3000)); // another receiver, due a little later
  await db.close();
  const srv = await startServer({ dbEnv: data.env, env: { APP_ENCRYPTION_KEY: KEY.toString('base64'), NODE_OPTIONS: `--import=${pathToFileURL(preload)}` } });
  try {
    const escaped = () => srv.output().split('\n').filter((l) => / ERROR an error escaped from a webhook delivery; the server keeps running /.test(l));
    const waitFor = async (what: string, ok: () => boolean) => {
      const end = Date.now() + 30_000;
      while (!ok()) {
        if (srv.proc.exitCode !== null || Date.now() > end) throw new Error(`${what}: not seen (exit ${srv.proc.exitCode}):\n${srv.output()}`);
        await new Promise((r) => setTimeout(r, 50));
      }
    };
    await waitFor('three escaped errors logged and three POSTs', () => escaped().length === 3 && rx.requests.filter((r) => r.url === '/throw').length === 3);
    for (const line of escaped()) {
      assert.match(line, /deliveryId=[0-9a-f-]{36} webhookId=[0-9a-f-]{36} attempt=1 origin=uncaughtException error="Error: injected: thrown inside a delivery attempt for https:\/\/\*\*\*@x\.test\/\?\*\*\*" stack="/);
    }
    assert.not.match(srv.output(), /pa55|t0ken/, 'no credential or query string in the log');
    assert.is(srv.proc.exitCode, null, 'still running');
    await waitFor('the later delivery to another receiver', () => rx.requests.some((r) => r.url === '/fine'));
    assert.is(await srv.stop('SIGTERM'), 0);
    db = await data.open();
    assert.equal((await deliveries(db, throwing.id)).map((d) => d.status), ['delivered', 'delivered', 'delivered'], 'each attempt finished and was recorded');
    assert.equal((await deliveries(db, fine.id)).map((d) => d.status), ['delivered']);
    await db.close();
  } finally {
    await srv.cleanup();
    await rx.close();
    await data.drop();
  }
});

test.run();

// The database a recover test's server starts on (recover-api, recover-page): a webhook to a loopback
// receiver whose deliveries really failed there (the worker in-process, each delivery allowed one
// attempt), one of them ended 3 days ago and one delivered since, so exactly two are recoverable
// from a day back. PGlite allows one process at a time: it is closed before the server starts.
import { sql } from '../../functions/lib/db/port.ts';
import { KEY, addProject, addWebhook, emit, fakeClock, serverDatabase, setAllowlist, worker } from './_harness.ts';
import type { Receiver } from './_harness.ts';

export interface Prepared {
  /** The server's database environment, with the encryption key the webhook's secret was stored under. */
  env: Record<string, string>;
  drop: () => Promise<void>;
  hook: { id: string; secret: string; url: string };
  /** The first series' request body per delivery id. */
  firstSeries: Map<string, string>;
  /** The ids of the two deliveries that failed within the last day, sorted. */
  recentFailed: string[];
}

export async function preparedFailures(rx: Receiver): Promise<Prepared> {
  const prepared = (await serverDatabase())!;
  const db = await prepared.open();
  await setAllowlist(db, ['127.0.0.1/32']);
  const project = await addProject(db);
  const url = `${rx.url}/in`;
  const hook = await addWebhook(db, { url, events: ['pr.merged'] });
  rx.handle((_req, res) => res.writeHead(500).end('down'));
  for (let i = 0; i < 4; i++) await emit(db, 'pr.merged', project);
  const w = worker(db, { clock: fakeClock() });
  await w.dispatch();
  await db.query(sql`update outbound_deliveries set attempts_allowed = 1 where webhook_id = ${hook.id}`);
  await w.tick();
  const firstSeries = new Map(rx.requests.map((r) => [String(r.headers['x-svc-delivery']), r.body]));
  const ids = [...firstSeries.keys()].sort();
  if (ids.length !== 4) throw new Error(`expected 4 failed deliveries, the receiver saw ${ids.length}`);
  await db.query(sql`update outbound_deliveries set updated_at = now() - interval '3 days' where id = ${ids[0]}`);
  await db.query(sql`update outbound_deliveries set status = 'delivered', delivered_at = now() where id = ${ids[1]}`);
  await db.close();
  rx.requests.length = 0;
  return { env: { ...prepared.env, APP_ENCRYPTION_KEY: KEY.toString('base64') }, drop: prepared.drop, hook: { ...hook, url }, firstSeries, recentFailed: ids.slice(2) };
}

// A command asked on one process and run through another (functions/runners/commands.ts): the answer's NOTIFY
// can be handled on the asking process before the reply to its own insert is — they come on two connections
// (LISTEN, and a pooled one that postgres.js may pipeline behind other statements) and nothing orders them.
// Under ingest that happened to a few commands in a thousand (bench/fleet.mjs, the slowest commands by hop:
// `out` ≈ 1,000 ms): the waiter, set after the insert, missed the NOTIFY, and the requester waited for its next
// check of the row. Here the asking process's database holds the insert's reply until the answer's NOTIFY has
// been handled there.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { sql } from '../../functions/lib/db/index.ts';
import type { Db, Sql } from '../../functions/lib/db/index.ts';
import { createLogger } from '../../functions/lib/log.ts';
import { CommandRelay } from '../../functions/runners/commands.ts';
import type { Conn, ResultFrame, RunnerSockets } from '../../functions/runners/socket.ts';
import type { ServerFrame } from '../../protocol/frames.ts';
import { migratedTestDb } from '../helpers/db.ts';

const DONE = 'svc_runner_cmd_done';
const INSERT = /insert into runner_commands/;
/** The requester's re-read of its row (commands.ts redeliver): what a missed answer costs. */
const RECHECK = /select c\.status, r\.connected_instance as instance/;

test('an answer notified before the insert\'s own reply still wakes the requester at once: no wait for the next check', async () => {
  const { db: real, cleanup } = await migratedTestDb();
  const unlisten: (() => Promise<void>)[] = [];
  try {
    await real.query(sql`insert into runners (id, name, paired_at, connected_instance, last_seen_at) values ('r1', 'one', now(), 'holder', now())`);
    const log = createLogger('error');

    // The holder: the runner's socket is here; the runner answers each command it is sent.
    let holder: CommandRelay;
    const conn = { runnerId: 'r1' } as unknown as Conn;
    const holderSockets = {
      instance: 'holder',
      get: (id: string) => (id === 'r1' ? conn : undefined),
      heldIds: () => ['r1'],
      send: (_c: Conn, frame: ServerFrame) => {
        if (frame.type !== 'command') return;
        const answer: ResultFrame = { type: 'result', requestId: frame.requestId, ok: true, data: { pong: true } } as ResultFrame;
        setImmediate(() => void holder.onResult('r1', answer));
      },
    } as unknown as RunnerSockets;
    holder = new CommandRelay(real, log, holderSockets);

    // The asking process: its insert's reply comes only once the answer's NOTIFY has been handled here.
    const doneHere = new Map<string, () => void>();
    const handled = new Set<string>();
    let inserts = 0;
    let rechecks = 0;
    const asking = new Proxy(real, {
      get(target, key, receiver) {
        if (key === 'listen') {
          return (channel: string, onPayload: (p: string) => void, onListen?: () => void) =>
            target.listen(channel, channel === DONE ? (p) => (onPayload(p), handled.add(p), doneHere.get(p)?.()) : onPayload, onListen);
        }
        if (key !== 'query') return Reflect.get(target, key, receiver);
        return async (q: Sql) => {
          const { text, params } = q.compile();
          if (RECHECK.test(text)) rechecks++;
          if (!INSERT.test(text)) return target.query(q);
          inserts++;
          const requestId = String(params[0]);
          const rows = await target.query(q);
          if (!handled.has(requestId)) await new Promise<void>((resolve) => doneHere.set(requestId, resolve));
          return rows;
        };
      },
    }) as Db;
    const askingSockets = { instance: 'asking', get: () => undefined, heldIds: () => [], send: () => {} } as unknown as RunnerSockets;
    const asker = new CommandRelay(asking, log, askingSockets);
    for (const relay of [holder, asker]) unlisten.push(...(await Promise.all(relay.listen())));

    for (let i = 0; i < 3; i++) {
      const out = await asker.command('r1', 'runner.ping', {}, null);
      assert.equal(out, { status: 'done', data: { pong: true } });
    }
    assert.is(inserts, 3);
    assert.is(handled.size, 3, 'each answer was notified to the asking process before its insert returned');
    assert.is(rechecks, 0, 'no command waited for a re-read of its row');
  } finally {
    for (const u of unlisten) await u().catch(() => {});
    await cleanup();
  }
});

test.run();

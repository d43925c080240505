// 3 server processes × 200 concurrent admin actions on one PostgreSQL → one valid chain.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { verifyChain } from '../../functions/audit/verify.ts';
import { openPostgres } from '../../functions/lib/db/postgres.ts';
import { sql } from '../../functions/lib/db/port.ts';
import { TEST_DB, freshPostgres, onlyOn } from '../helpers/db.ts';
import { startServer } from '../helpers/server.ts';
import type { RunningServer } from '../helpers/server.ts';

onlyOn('postgres', test, 1, () => {
  test('600 concurrent audited writes from 3 processes: gapless, linked, verifiable', async () => {
    const pg = await freshPostgres();
    const servers: RunningServer[] = [];
    try {
      const first = await startServer({ admin: true, dbEnv: { DATABASE_URL: pg.url } });
      servers.push(first, ...(await Promise.all([1, 2].map(() => startServer({ dbEnv: { DATABASE_URL: pg.url } })))));
      const auth = { authorization: `Bearer ${first.admin.token}`, 'content-type': 'application/json' };
      const results = await Promise.all(
        servers.flatMap((s, p) =>
          Array.from({ length: 200 }, (_, i) =>
            fetch(`${s.url}/api/prices/model-${p}-${i}`, { method: 'PUT', headers: auth, body: JSON.stringify({ inputUsdPerMTok: i, outputUsdPerMTok: p }) }).then((r) => r.status),
          ),
        ),
      );
      assert.ok(results.every((s) => s === 200), `statuses: ${[...new Set(results)].join(',')}`);
      const db = await openPostgres(pg.url, 2);
      try {
        const v = await verifyChain(db);
        assert.is(v.ok, true, v.problem ?? '');
        const [{ n, max }] = await db.query<{ n: number; max: number }>(sql`select count(*)::int as n, max(seq)::int as max from audit_records where action = 'price.set'`);
        assert.is(n, 600);
        const [{ total }] = await db.query<{ total: number }>(sql`select count(*)::int as total from audit_records`);
        assert.is(max, total, 'no gaps');
        assert.is(v.recordsChecked, total);
      } finally {
        await db.close();
      }
    } finally {
      await Promise.all(servers.map((s) => s.cleanup()));
      await pg.drop();
    }
  });
});

test.run();

// Migration 0011 on an instance that already had prices (docs/cost.md, "Cost"): each existing price
// becomes a version in force from 1970, its cache-write price the 5-minute one, the 1-hour one twice
// the input price (0 where there was no cache-write price); the seed then adds nothing, so edited
// prices survive. On an empty table the seed adds protocol/prices.ts's DEFAULT_PRICES.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { loadMigrations, migrate } from '../../functions/lib/db/migrate.ts';
import { seed } from '../../functions/seed.ts';
import { sql } from '../../functions/lib/db/port.ts';
import { createLogger } from '../../functions/lib/log.ts';
import { DEFAULT_PRICES } from '../../protocol/prices.ts';
import { ROOT, openTestDb } from '../helpers/db.ts';

const quiet = createLogger('error');
const seedText = readFileSync(join(ROOT, 'sql', 'seed.sql'), 'utf8');

test('0011 keeps the prices an instance had, as versions from 1970; the seed adds none then, 0041 and 0044 only the Gemini and OpenCode models it had no version of', async () => {
  const { db, cleanup } = await openTestDb();
  try {
    const all = loadMigrations(join(ROOT, 'sql'));
    await migrate(db, all.filter((m) => m.name < '0011'), quiet);
    await db.query(sql`
      insert into model_prices (model, input_usd_per_mtok, output_usd_per_mtok, cache_read_usd_per_mtok, cache_write_usd_per_mtok)
      values ('claude-edited', 2.5, 12.5, 0.25, 3.125), ('gpt-edited', 1, 8, 0.1, 0)`);
    await migrate(db, all, quiet);
    await seed(db, seedText, quiet);
    const rows = await db.query<Record<string, unknown>>(sql`
      select model, input_usd_per_mtok::float8 as i, output_usd_per_mtok::float8 as o, cache_read_usd_per_mtok::float8 as r,
             cache_write_5m_usd_per_mtok::float8 as w5, cache_write_1h_usd_per_mtok::float8 as w1,
             effective_from = timestamptz '1970-01-01 00:00:00+00' as from_start
        from model_prices order by model collate "C"`);
    const gemini = DEFAULT_PRICES.filter((p) => p.model.startsWith('gemini-'))
      .map((p) => ({ model: p.model, i: p.input, o: p.output, r: p.cacheRead, w5: 0, w1: 0, from_start: true }));
    assert.ok(gemini.length >= 8, 'the Gemini defaults');
    const OPENCODE = ['glm-4.6', 'kimi-k2-thinking', 'qwen3-coder', 'grok-code-fast-1'];
    const opencode = DEFAULT_PRICES.filter((p) => OPENCODE.includes(p.model))
      .map((p) => ({ model: p.model, i: p.input, o: p.output, r: p.cacheRead, w5: p.cacheWrite5m, w1: p.cacheWrite1h, from_start: true }));
    assert.is(opencode.length, OPENCODE.length, "0044's models are in the seed");
    assert.equal(rows, [
      { model: 'claude-edited', i: 2.5, o: 12.5, r: 0.25, w5: 3.125, w1: 5, from_start: true },
      ...gemini,
      ...opencode,
      { model: 'gpt-edited', i: 1, o: 8, r: 0.1, w5: 0, w1: 0, from_start: true },
    ].sort((a, b) => (a.model < b.model ? -1 : 1)));
  } finally {
    await cleanup();
  }
});

test('on an empty price table the seed adds DEFAULT_PRICES once', async () => {
  const { db, cleanup } = await openTestDb();
  try {
    await migrate(db, loadMigrations(join(ROOT, 'sql')), quiet);
    await seed(db, seedText, quiet);
    await seed(db, seedText, quiet);
    const rows = await db.query<{ model: string; o: number; w1: number }>(sql`
      select model, output_usd_per_mtok::float8 as o, cache_write_1h_usd_per_mtok::float8 as w1 from model_prices order by model collate "C"`);
    assert.equal(rows, [...DEFAULT_PRICES].sort((a, b) => (a.model < b.model ? -1 : 1)).map((p) => ({ model: p.model, o: p.output, w1: p.cacheWrite1h })));
  } finally {
    await cleanup();
  }
});

test.run();

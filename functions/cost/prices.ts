// The price table on the server (docs/cost.md, "Server"): versions per model, each effective from a
// time, so pricing a request asks "which version was in force when it ran". The formula and the model
// matching are protocol/prices.ts's (the runner's `usage` command uses the same), and the seed comes
// from its DEFAULT_PRICES, only when the table is empty.
import { DEFAULT_PRICES, costUsd, findPrice } from '../../protocol/prices.ts';
import type { ModelPrice, TokenCounts } from '../../protocol/prices.ts';
import { sql } from '../lib/db/index.ts';
import type { Queryable } from '../lib/db/index.ts';

export type Tier = NonNullable<ModelPrice['above200k']>;

export interface PriceRow {
  model: string;
  input_usd_per_mtok: string;
  output_usd_per_mtok: string;
  cache_read_usd_per_mtok: string;
  cache_write_5m_usd_per_mtok: string;
  cache_write_1h_usd_per_mtok: string;
  above_200k: Tier | null;
  long_context: ModelPrice['longContext'] | null;
  fast_multiplier: string | null;
  effective_from: Date;
  created_by: string | null;
  updated_at: Date;
}

export interface PriceVersion extends ModelPrice {
  effectiveFrom: Date;
}

export const toVersion = (r: PriceRow): PriceVersion => ({
  model: r.model,
  input: Number(r.input_usd_per_mtok),
  output: Number(r.output_usd_per_mtok),
  cacheWrite5m: Number(r.cache_write_5m_usd_per_mtok),
  cacheWrite1h: Number(r.cache_write_1h_usd_per_mtok),
  cacheRead: Number(r.cache_read_usd_per_mtok),
  ...(r.above_200k ? { above200k: r.above_200k } : {}),
  ...(r.long_context ? { longContext: r.long_context } : {}),
  ...(r.fast_multiplier === null ? {} : { fastMultiplier: Number(r.fast_multiplier) }),
  effectiveFrom: new Date(r.effective_from),
});

/** Every version of every price, oldest first per model. */
export async function loadPrices(q: Queryable): Promise<PriceVersion[]> {
  const rows = await q.query<PriceRow>(sql`select * from model_prices order by model, effective_from`);
  return rows.map(toVersion);
}

/** The versions in force at `at`: per model, the newest one effective at or before it. */
export function pricesAt(versions: readonly PriceVersion[], at: Date): PriceVersion[] {
  const byModel = new Map<string, PriceVersion>();
  for (const v of versions) if (v.effectiveFrom.getTime() <= at.getTime()) byModel.set(v.model, v); // sorted: the last wins
  return [...byModel.values()];
}

export interface Priced {
  costUsd: number | null;
  price: PriceVersion | null;
}

/** A request's cost at the price in force when it ran; null (never $0) when the model has none. */
export function priceRequest(versions: readonly PriceVersion[], model: string, at: Date, tokens: TokenCounts, speed?: 'standard' | 'fast' | null): Priced {
  const price = findPrice(model, pricesAt(versions, at)) as PriceVersion | null;
  return price ? { costUsd: costUsd(tokens, price, speed), price } : { costUsd: null, price: null };
}

/** Seed (spec: Upgrade step 2): the default price table, only when no price exists at all. */
export async function seedPrices(q: Queryable): Promise<number> {
  const rows = DEFAULT_PRICES.map((p) => ({
    model: p.model,
    input: p.input,
    output: p.output,
    cache_read: p.cacheRead,
    cache_5m: p.cacheWrite5m,
    cache_1h: p.cacheWrite1h,
    above: p.above200k ?? null,
    long: p.longContext ?? null,
    fast: p.fastMultiplier ?? null,
  }));
  const added = await q.query(sql`
    insert into model_prices (model, input_usd_per_mtok, output_usd_per_mtok, cache_read_usd_per_mtok, cache_write_5m_usd_per_mtok,
                              cache_write_1h_usd_per_mtok, above_200k, long_context, fast_multiplier, effective_from)
    select x.model, x.input, x.output, x.cache_read, x.cache_5m, x.cache_1h, x.above, x.long, x.fast, timestamptz '1970-01-01 00:00:00+00'
      from jsonb_to_recordset(${sql.json(rows)}) as x(model text, input numeric, output numeric, cache_read numeric, cache_5m numeric,
                                                      cache_1h numeric, above jsonb, long jsonb, fast numeric)
     where not exists (select 1 from model_prices)
    returning 1`);
  return added.length;
}

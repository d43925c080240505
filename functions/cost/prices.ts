// The price table on the server (docs/cost.md, "Server"): versions per model, each effective from a
// time, so pricing a request asks "which version was in force when it ran". The formula and the model
// matching are protocol/prices.ts's (the runner's `usage` command uses the same), and the seed comes
// from its DEFAULT_PRICES, only when the table is empty.
import { DEFAULT_PRICES, costUsd, findPrice } from '../../protocol/prices.ts';
import type { ModelPrice, TokenCounts } from '../../protocol/prices.ts';
import type { PriceAnswer } from '../../protocol/api/cost.ts';
import { sql } from '../lib/db/index.ts';
import type { Db, Queryable } from '../lib/db/index.ts';
import type { PriceBody } from './schema.ts';

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

/** A price's terms as the API names them (PUT /api/prices/:model's body, the answers, the seed's rows). */
export const priceTerms = (v: ModelPrice) => ({
  model: v.model,
  inputUsdPerMTok: v.input,
  outputUsdPerMTok: v.output,
  cacheReadUsdPerMTok: v.cacheRead,
  cacheWrite5mUsdPerMTok: v.cacheWrite5m,
  cacheWrite1hUsdPerMTok: v.cacheWrite1h,
  above200k: v.above200k ?? null,
  longContext: v.longContext ?? null,
  fastMultiplier: v.fastMultiplier ?? null,
});

/** A stored version as the API answers it. */
export function toPrice(r: PriceRow): PriceAnswer {
  const v = toVersion(r);
  return { ...priceTerms(v), effectiveFrom: v.effectiveFrom.toISOString(), updatedAt: new Date(r.updated_at).toISOString() };
}

/** The version shown as a model's price: the newest in force now, else (only future ones) the next. */
export function current(rows: PriceRow[], now = Date.now()): PriceRow | null {
  const past = rows.filter((r) => new Date(r.effective_from).getTime() <= now);
  return past.length ? past[past.length - 1] : (rows[0] ?? null);
}

/** Every stored version, oldest first per model. */
export const priceRows = (q: Queryable) => q.query<PriceRow>(sql`select * from model_prices order by model, effective_from`);

/** One model's stored versions, oldest first. */
export const versionsOf = (q: Queryable, model: string) => q.query<PriceRow>(sql`select * from model_prices where model = ${model} order by effective_from`);

/** Every version of every price, oldest first per model. */
export async function loadPrices(q: Queryable): Promise<PriceVersion[]> {
  return (await priceRows(q)).map(toVersion);
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
  const added = await q.query(sql`
    insert into model_prices (model, input_usd_per_mtok, output_usd_per_mtok, cache_read_usd_per_mtok, cache_write_5m_usd_per_mtok,
                              cache_write_1h_usd_per_mtok, above_200k, long_context, fast_multiplier, effective_from)
    select x.model, x."inputUsdPerMTok", x."outputUsdPerMTok", x."cacheReadUsdPerMTok", x."cacheWrite5mUsdPerMTok", x."cacheWrite1hUsdPerMTok",
           x."above200k", x."longContext", x."fastMultiplier", timestamptz '1970-01-01 00:00:00+00'
      from jsonb_to_recordset(${sql.json(DEFAULT_PRICES.map(priceTerms))})
           as x(model text, "inputUsdPerMTok" numeric, "outputUsdPerMTok" numeric, "cacheReadUsdPerMTok" numeric, "cacheWrite5mUsdPerMTok" numeric,
                "cacheWrite1hUsdPerMTok" numeric, "above200k" jsonb, "longContext" jsonb, "fastMultiplier" numeric)
     where not exists (select 1 from model_prices)
    returning 1`);
  return added.length;
}

/** Saves a version of `model`'s price effective from `p.effectiveFrom` (default now); the same time again replaces it. */
export async function insertPrice(q: Queryable, model: string, p: PriceBody, by: string): Promise<PriceRow> {
  const from = p.effectiveFrom ? new Date(p.effectiveFrom) : null;
  const [row] = await q.query<PriceRow>(sql`
    insert into model_prices (model, input_usd_per_mtok, output_usd_per_mtok, cache_read_usd_per_mtok, cache_write_5m_usd_per_mtok,
                              cache_write_1h_usd_per_mtok, above_200k, long_context, fast_multiplier, effective_from, created_by)
    values (${model}, ${p.inputUsdPerMTok}, ${p.outputUsdPerMTok}, ${p.cacheReadUsdPerMTok}, ${p.cacheWrite5mUsdPerMTok},
            ${p.cacheWrite1hUsdPerMTok}, ${sql.json(p.above200k)}, ${sql.json(p.longContext)}, ${p.fastMultiplier}, coalesce(${from}::timestamptz, now()), ${by})
    on conflict (model, effective_from) do update set
      input_usd_per_mtok = excluded.input_usd_per_mtok, output_usd_per_mtok = excluded.output_usd_per_mtok,
      cache_read_usd_per_mtok = excluded.cache_read_usd_per_mtok, cache_write_5m_usd_per_mtok = excluded.cache_write_5m_usd_per_mtok,
      cache_write_1h_usd_per_mtok = excluded.cache_write_1h_usd_per_mtok, above_200k = excluded.above_200k,
      long_context = excluded.long_context, fast_multiplier = excluded.fast_multiplier, created_by = excluded.created_by, updated_at = now()
    returning *`);
  return row;
}

const n = (v: unknown) => (v === null || v === undefined ? 0 : Number(v));

/**
 * Requests that had no price and now have one (a price added or made effective earlier): priced now.
 * Costs already stored are never changed. Returns the projects whose spend grew.
 */
export async function priceUnpriced(db: Db, model: string): Promise<Set<string>> {
  const versions = await loadPrices(db);
  const mine = versions.filter((v) => v.model === model);
  const models = (await db.query<{ model: string }>(sql`select distinct model from llm_requests where cost_usd is null`))
    .map((r) => r.model)
    .filter((m) => findPrice(m, mine) !== null);
  const touched = new Set<string>();
  if (models.length === 0) return touched;
  const rows = await db.query<{ id: string; model: string; at: Date; speed: 'fast' | 'standard' | null; project_id: string | null } & Record<string, string>>(sql`
    select id, model, at, speed, project_id, input_tokens, output_tokens, cache_write_5m_tokens, cache_write_1h_tokens, cache_read_tokens
      from llm_requests where cost_usd is null and model in (select jsonb_array_elements_text(${sql.json(models)}))`);
  for (const r of rows) {
    const tokens = {
      inputTokens: n(r.input_tokens),
      outputTokens: n(r.output_tokens),
      cacheWrite5mTokens: n(r.cache_write_5m_tokens),
      cacheWrite1hTokens: n(r.cache_write_1h_tokens),
      cacheReadTokens: n(r.cache_read_tokens),
    };
    const { costUsd: cost, price: p } = priceRequest(versions, r.model, new Date(r.at), tokens, r.speed);
    if (cost === null || !p) continue;
    await db.query(sql`
      update llm_requests set cost_usd = ${cost}, price_model = ${p.model}, price_effective_from = ${p.effectiveFrom}, updated_at = now()
       where id = ${r.id} and cost_usd is null`);
    if (r.project_id) touched.add(r.project_id);
  }
  return touched;
}

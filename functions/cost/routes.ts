// The LLM price table (USD per million tokens). Seeded once; edits here survive restarts and upgrades.
import { z } from 'zod';
import { audited } from '../audit/audit.ts';
import { route } from '../lib/context.ts';
import type { Route } from '../lib/context.ts';
import { sql } from '../lib/db/index.ts';
import type { Queryable } from '../lib/db/index.ts';
import { notFound, json } from '../lib/errors.ts';

const price = z.number().finite().min(0).max(1_000_000);
export const priceBody = z.strictObject({
  inputUsdPerMTok: price,
  outputUsdPerMTok: price,
  cacheReadUsdPerMTok: price.default(0),
  cacheWriteUsdPerMTok: price.default(0),
});
const modelParams = z.strictObject({
  model: z.string().regex(/^[A-Za-z0-9._:@-]{1,100}$/, { message: 'must be 1-100 letters, digits or ._:@-' }),
});

interface PriceRow {
  model: string;
  input_usd_per_mtok: string;
  output_usd_per_mtok: string;
  cache_read_usd_per_mtok: string;
  cache_write_usd_per_mtok: string;
  updated_at: Date;
}

const toPrice = (r: PriceRow) => ({
  model: r.model,
  inputUsdPerMTok: Number(r.input_usd_per_mtok),
  outputUsdPerMTok: Number(r.output_usd_per_mtok),
  cacheReadUsdPerMTok: Number(r.cache_read_usd_per_mtok),
  cacheWriteUsdPerMTok: Number(r.cache_write_usd_per_mtok),
  updatedAt: new Date(r.updated_at).toISOString(),
});

const priceOf = async (db: Queryable, model: string) => {
  const [row] = await db.query<PriceRow>(sql`select * from model_prices where model = ${model}`);
  return row ? toPrice(row) : null;
};

export const routes: Route[] = [
  route({
    method: 'GET',
    path: '/api/prices',
    summary: 'LLM prices in USD per million tokens',
    tag: 'cost',
    access: 'user',
    async handler(_input, { db }) {
      const rows = await db.query<PriceRow>(sql`select * from model_prices order by model`);
      return json({ prices: rows.map(toPrice) });
    },
  }),
  route({
    method: 'GET',
    path: '/api/prices/:model',
    summary: "One model's price",
    tag: 'cost',
    access: 'user',
    params: modelParams,
    async handler({ params }, { db }) {
      const price = await priceOf(db, params.model);
      if (!price) throw notFound(`no price for model ${params.model}`);
      return json(price);
    },
  }),
  route({
    method: 'PUT',
    path: '/api/prices/:model',
    summary: "Set a model's price; edits survive restarts and upgrades",
    tag: 'cost',
    access: 'instanceAdmin',
    params: modelParams,
    body: priceBody,
    async handler({ params, body: p, principal, requestId }, { db }) {
      const { model } = params;
      const out = await audited(
        db,
        (r: { before: unknown; after: unknown }) => ({ actor: principal!, action: 'price.set', target: { type: 'model_price', id: model }, diff: r, requestId }),
        async (tx) => {
          const before = await priceOf(tx, model);
          await tx.query(sql`
            insert into model_prices (model, input_usd_per_mtok, output_usd_per_mtok, cache_read_usd_per_mtok, cache_write_usd_per_mtok)
            values (${model}, ${p.inputUsdPerMTok}, ${p.outputUsdPerMTok}, ${p.cacheReadUsdPerMTok}, ${p.cacheWriteUsdPerMTok})
            on conflict (model) do update set
              input_usd_per_mtok = excluded.input_usd_per_mtok, output_usd_per_mtok = excluded.output_usd_per_mtok,
              cache_read_usd_per_mtok = excluded.cache_read_usd_per_mtok, cache_write_usd_per_mtok = excluded.cache_write_usd_per_mtok,
              updated_at = now()`);
          return { before, after: await priceOf(tx, model) };
        },
      );
      return json(out.after);
    },
  }),
];

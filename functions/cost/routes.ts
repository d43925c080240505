// The LLM price table (USD per million tokens). Seeded once; edits here survive restarts and upgrades.
import { z } from 'zod';
import { sql } from '../lib/db/index.ts';
import { notFound } from '../lib/errors.ts';
import { parseWith, readJson } from '../lib/http.ts';
import type { Route } from '../lib/context.ts';

const price = z.number().finite().min(0).max(1_000_000);
export const priceBody = z.strictObject({
  inputUsdPerMTok: price,
  outputUsdPerMTok: price,
  cacheReadUsdPerMTok: price.default(0),
  cacheWriteUsdPerMTok: price.default(0),
});
const modelParams = z.object({
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

export const routes: Route[] = [
  {
    method: 'GET',
    path: '/api/prices',
    async handler(_request, { db }) {
      const rows = await db.query<PriceRow>(sql`select * from model_prices order by model`);
      return Response.json({ prices: rows.map(toPrice) });
    },
  },
  {
    method: 'GET',
    path: '/api/prices/:model',
    async handler(request, { db }) {
      const { model } = parseWith(modelParams, request.params);
      const [row] = await db.query<PriceRow>(sql`select * from model_prices where model = ${model}`);
      if (!row) throw notFound(`no price for model ${model}`);
      return Response.json(toPrice(row));
    },
  },
  {
    method: 'PUT',
    path: '/api/prices/:model',
    async handler(request, { db, config }) {
      const { model } = parseWith(modelParams, request.params);
      const p = await readJson(request, priceBody, config.MAX_BODY_BYTES);
      const [row] = await db.query<PriceRow>(sql`
        insert into model_prices (model, input_usd_per_mtok, output_usd_per_mtok, cache_read_usd_per_mtok, cache_write_usd_per_mtok)
        values (${model}, ${p.inputUsdPerMTok}, ${p.outputUsdPerMTok}, ${p.cacheReadUsdPerMTok}, ${p.cacheWriteUsdPerMTok})
        on conflict (model) do update set
          input_usd_per_mtok = excluded.input_usd_per_mtok, output_usd_per_mtok = excluded.output_usd_per_mtok,
          cache_read_usd_per_mtok = excluded.cache_read_usd_per_mtok, cache_write_usd_per_mtok = excluded.cache_write_usd_per_mtok,
          updated_at = now()
        returning *`);
      return Response.json(toPrice(row));
    },
  },
];

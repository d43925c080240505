// The settings API's statements (functions/settings/routes.ts reads as validate → call → present):
// instance settings. Instance secrets' statements are in secrets.ts.
import { sql } from '../lib/db/index.ts';
import type { Queryable } from '../lib/db/index.ts';

export const listSettings = (q: Queryable) => q.query<{ key: string; value: unknown; description: string }>(sql`select key, value, description from settings order by key`);

export async function saveSetting(q: Queryable, key: string, value: unknown): Promise<void> {
  await q.query(sql`insert into settings (key, value) values (${key}, ${sql.json(value)}) on conflict (key) do update set value = excluded.value, updated_at = now()`);
}

// The seed the server applies at start (spec: Upgrade step 2): sql/seed.sql, then the price table from
// protocol/prices.ts only when none exists, in one transaction under the migration lock (lib/db/migrate.ts).
// Here rather than in the migration code, which then needs no area of its own (cost/).
import { seedPrices } from './cost/prices.ts';
import type { Db } from './lib/db/index.ts';
import { seed as seedUnderLock } from './lib/db/migrate.ts';
import type { Logger } from './lib/log.ts';

export const seed = (db: Db, text: string, log: Logger): Promise<void> => seedUnderLock(db, text, log, seedPrices);

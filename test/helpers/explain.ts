// EXPLAIN ANALYZE of a statement inside a transaction that is rolled back: the plan as it ran, with
// each node's rows and loops, and nothing the statement wrote kept. For tests that assert how much a
// statement reads (a rescan per row, a scan of a whole history), which no timing can show reliably.
import { sql } from '../../functions/lib/db/port.ts';
import type { Db, Sql } from '../../functions/lib/db/port.ts';

export interface PlanNode {
  'Node Type': string;
  'Actual Rows': number;
  'Actual Loops': number;
  'Rows Removed by Filter'?: number;
  Plans?: PlanNode[];
}

class Rollback extends Error {}

export async function explainAnalyze(db: Db, q: Sql): Promise<PlanNode> {
  let plan: PlanNode | undefined;
  await db
    .transaction(async (tx) => {
      const [row] = await tx.query<Record<string, unknown>>(sql`explain (analyze, format json) ${q}`);
      const value = Object.values(row)[0];
      plan = (typeof value === 'string' ? JSON.parse(value) : value)[0].Plan;
      throw new Rollback();
    })
    .catch((err) => {
      if (!(err instanceof Rollback)) throw err;
    });
  return plan!;
}

/** Every node of a plan, depth first. */
export const planNodes = (n: PlanNode): PlanNode[] => [n, ...(n.Plans ?? []).flatMap(planNodes)];

const READS = new Set(['Seq Scan', 'Index Scan', 'Index Only Scan', 'Bitmap Index Scan', 'Bitmap Heap Scan', 'Tid Scan']);

/** Rows and index entries a plan's scans of tables produced or filtered away, over all their loops:
 *  how much it read. */
export const rowsTouched = (n: PlanNode): number =>
  planNodes(n)
    .filter((p) => READS.has(p['Node Type']))
    .reduce((sum, p) => sum + (p['Actual Rows'] + (p['Rows Removed by Filter'] ?? 0)) * p['Actual Loops'], 0);

// Project budgets as the rest of the service reads them: ONE function, so the cost area can fill in how
// spend is counted without touching its callers (inbound triggers skip a delivery with
// `budget_exceeded` when it says so — spec: Inbound delivery states).
import type { Queryable } from '../lib/db/index.ts';

/**
 * True when the project's budget is set to stop and is exceeded. Spend is not counted yet (the cost
 * issue defines the period and the sources), so until then this answers false: nothing is ever
 * skipped for budget. docs/triggers.md says so.
 */
export async function budgetExceeded(_db: Queryable, _projectId: string): Promise<boolean> {
  return false;
}

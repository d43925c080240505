// The daily and monthly reports' sums per period × runtime × model, kept beside the stored report
// (usage-index.sums.bin, docs/runner.md "The index") so that a run after an append of new Claude calls
// adds only the new requests to them instead of reading and summing every stored request again.
// Byte for byte: the cost of a row is a floating-point sum in scan order (by transcript, then line), so each
// group keeps its requests' costs with their transcript's index; a new cost is put after those of its
// transcript and the ones before, and the group's cost summed again in that order.
// The message ids counted are kept as 32-bit hashes: a new id whose hash is known (a real duplicate, or a
// collision) only sends the run down the full path, never to a wrong report. The Claude transcripts the
// costs' indexes refer to are the meta file's, in scan order (checked against the scan's); the sums keep
// their count.

/**
 * A group: period, runtime, report model, input, output, cache write, cache read, cost, unpriced (0/1), and its
 * priced requests' costs in scan order: their transcripts as runs ([transcript index, how many costs, …]) and
 * the costs themselves (stored as float64: read and written as they are, no number text, no loop per cost).
 */
export type GroupRow = [string, string, string, number, number, number, number, number, number, number[], Costs];
export type Costs = number[] | Float64Array;

/** What is stored with the report: how many Claude transcripts (the meta file's, in scan order), the counted ids' hashes, the groups. */
export interface Groups {
  files: number;
  mids: ArrayLike<number>;
  rows: GroupRow[];
}

/** A request not from a Claude transcript (or of unknown file): later than every transcript. */
export const NO_FILE = 1e9;

/** FNV-1a, 32 bits: only ever a reason to take the full path when two ids meet. */
export function midHash(s: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 0x01000193);
  return h >>> 0;
}

/** The distinct message ids of an append's new lines (its `fresh` files), in order. */
export const freshMids = (fresh: readonly { entries: readonly { messageId: string | null }[] }[]): string[] =>
  [...new Set(fresh.flatMap((f) => f.entries.map((e) => e.messageId)))].filter((m): m is string => m !== null);

/**
 * Adds a priced request's cost to a group's costs: at the end (a full read, in scan order), or, with `stored`,
 * after the costs of its transcript and the ones before (an append: the stored costs are of every transcript).
 */
export function addCost(g: { runs: number[]; costs: Costs }, file: number, cost: number, stored: boolean): void {
  const runs = g.runs;
  let r = runs.length, at = g.costs.length;
  if (stored) while (r > 0 && runs[r - 2]! > file) at -= runs[(r -= 2) + 1]!;
  if (r > 0 && runs[r - 2] === file) runs[r - 1]!++;
  else runs.splice(r, 0, file, 1);
  if (!Array.isArray(g.costs)) g.costs = Array.from(g.costs);
  if (at === g.costs.length) g.costs.push(cost);
  else g.costs.splice(at, 0, cost);
}

/** The stored ids' hashes and the new ones, for the next sums. */
export function concatMids(a: ArrayLike<number>, b: readonly number[]): Uint32Array {
  const out = new Uint32Array(a.length + b.length);
  out.set(a);
  out.set(b, a.length);
  return out;
}

/** Whether `h` is in `sorted` (the stored hashes, ascending): a binary search, no set built for a few new ids. */
export function hasHash(sorted: ArrayLike<number>, h: number): boolean {
  let lo = 0, hi = sorted.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (sorted[mid]! < h) lo = mid + 1;
    else hi = mid;
  }
  return sorted[lo] === h;
}

// The daily and monthly reports' sums per period × runtime × model, kept beside the stored report
// (usage-index.sums.json, docs/runner.md "The index") so that a run after an append of new Claude calls
// adds only the new requests to them instead of reading and summing every stored request again.
// Byte for byte: the cost of a row is a floating-point sum in scan order (by transcript, then line), so each
// group keeps its requests' costs with their transcript's index; a new cost is put after those of its
// transcript and the ones before, and the group's cost summed again in that order.
// The message ids counted are kept as 32-bit hashes: a new id whose hash is known (a real duplicate, or a
// collision) only sends the run down the full path, never to a wrong report.

/** A group: period, runtime, report model, input, output, cache write, cache read, cost, unpriced (0/1), and its priced requests' [transcript index, cost, …] in scan order. */
export type GroupRow = [string, string, string, number, number, number, number, number, number, number[]];

/** What is stored with the report: the Claude transcripts in scan order, the counted ids' hashes, the groups. */
export interface Groups {
  files: string[];
  mids: number[];
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

export function validGroups(g: unknown): g is Groups {
  if (typeof g !== 'object' || g === null) return false;
  const x = g as Groups;
  return Array.isArray(x.files) && x.files.every((f) => typeof f === 'string') && Array.isArray(x.mids) && Array.isArray(x.rows) && x.rows.every((r) => Array.isArray(r) && r.length === 10 && Array.isArray(r[9]) && r[9].length % 2 === 0);
}

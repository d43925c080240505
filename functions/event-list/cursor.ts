// The event list's cursor (GET /api/events `after` and `next`): opaque to callers, it is the `seq` of the
// last event read (sql/0033_event_list.sql), so it holds across replicas, restarts and upgrades. Kept as
// decimal text: a bigint stays exact past 2^53.
const PREFIX = 'ev1.';

export const encodeCursor = (seq: string): string => Buffer.from(PREFIX + seq).toString('base64url');

/** The seq a cursor names, or null when the text is not a cursor of ours. */
export function decodeCursor(cursor: string): string | null {
  if (!/^[A-Za-z0-9_-]{1,40}$/.test(cursor)) return null;
  const text = Buffer.from(cursor, 'base64url').toString();
  if (!text.startsWith(PREFIX)) return null;
  const seq = text.slice(PREFIX.length);
  return /^(0|[1-9]\d{0,18})$/.test(seq) && BigInt(seq) <= 9223372036854775807n ? seq : null;
}

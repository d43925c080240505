// Incremental JSONL reading (docs/cost.md "Reading"): from a byte offset, hand every COMPLETE line to a
// callback and return the offset after the last complete line. A partial last line (an agent still writing
// it) is not consumed: the next read starts at it. Memory stays bounded by the chunk size plus the longest
// line; a line longer than MAX_LINE_BYTES is skipped whole (counted as corrupt), never buffered.
import { open } from 'node:fs/promises';

export const CHUNK_BYTES = 1 << 20;
export const MAX_LINE_BYTES = 64 << 20;

export interface ReadResult {
  /** Offset after the last complete line (where the next read starts). */
  offset: number;
  /** Size of the file when it was read; a size below the stored offset means truncated or replaced. */
  size: number;
  lines: number;
  /** Lines skipped for being longer than MAX_LINE_BYTES. */
  oversized: number;
}

/**
 * Calls `onLine(line, lineOffset)` for each complete line (without its `\n`; a trailing `\r` is kept, JSON
 * ignores it) from `offset` on. The buffer passed to onLine is only valid during the call.
 */
export async function readLines(path: string, offset: number, onLine: (line: Buffer, lineOffset: number) => void): Promise<ReadResult> {
  const fh = await open(path, 'r');
  try {
    const size = (await fh.stat()).size;
    const result: ReadResult = { offset, size, lines: 0, oversized: 0 };
    if (offset >= size) return result;
    const chunk = Buffer.allocUnsafe(CHUNK_BYTES);
    let pending: Buffer[] = [];
    let pendingBytes = 0;
    let skipping = false; // inside an oversized line: drop bytes until its newline
    let pos = offset; // file position of chunk[0]
    let lineStart = offset; // file offset where the current (pending) line began
    while (pos < size) {
      const { bytesRead } = await fh.read(chunk, 0, Math.min(CHUNK_BYTES, size - pos), pos);
      if (bytesRead === 0) break;
      let start = 0;
      while (start < bytesRead) {
        const nl = chunk.indexOf(10, start);
        if (nl === -1 || nl >= bytesRead) {
          if (!skipping) {
            const rest = bytesRead - start;
            if (pendingBytes + rest > MAX_LINE_BYTES) {
              skipping = true;
              pending = [];
              pendingBytes = 0;
            } else {
              pending.push(Buffer.from(chunk.subarray(start, bytesRead)));
              pendingBytes += rest;
            }
          }
          break;
        }
        if (skipping) {
          skipping = false;
          result.oversized++;
        } else {
          const line = pendingBytes ? Buffer.concat([...pending, chunk.subarray(start, nl)]) : chunk.subarray(start, nl);
          pending = [];
          pendingBytes = 0;
          if (line.length > 0) {
            result.lines++;
            onLine(line, lineStart);
          }
        }
        start = nl + 1;
        lineStart = pos + start;
        result.offset = lineStart;
      }
      pos += bytesRead;
    }
    return result;
  } finally {
    await fh.close();
  }
}
